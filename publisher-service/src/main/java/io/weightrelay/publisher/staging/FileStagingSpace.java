package io.weightrelay.publisher.staging;

import io.weightrelay.dataplane.LocalMemory;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.publisher.Futures;
import io.weightrelay.publisher.segment.SegmentOwner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map.Entry;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Staging in a file of its own, mapped once and pre-faulted (first touches of fresh {@code
 * /dev/shm} pages cost ten times a warm copy), carved by first fit. Storing copies each piece into
 * the store with one put (into the own segment while it has room, else into another node's over
 * tcp), so this is the mode for a segment too small to also hold what is staged, and the only one
 * on Mooncake, whose staging is a receive segment its agent maps ({@link
 * SegmentOwner#createStaging}).
 */
final class FileStagingSpace implements StagingSpace {

    private static final int PAGE = 4096;

    private final Path path;
    private final long capacity;
    private final ByteBuffer mapped;
    private final SegmentOwner owner;
    private final LocalMemory registered;
    private final TreeMap<Long, Long> free = new TreeMap<>();
    private long freeBytes;

    /**
     * @param owner the data plane puts go through; null for bookkeeping only (tests), then {@link
     *     #store} refuses
     */
    FileStagingSpace(Path path, long capacity, SegmentOwner owner) {
        if (capacity <= 0 || capacity > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "relay.staging.capacity must be in (0, 2 GiB) in file mode (one Java mapping)");
        }
        this.path = path;
        this.capacity = capacity;
        this.mapped = map(path, capacity);
        this.owner = owner;
        this.registered = owner == null ? null : owner.register(mapped.duplicate().clear());
        this.free.put(0L, capacity);
        this.freeBytes = capacity;
    }

    /**
     * Staging in {@code staging}, a receive segment of {@code owner}'s data plane that ranks map by
     * its file ({@link SegmentOwner#createStaging}); closing this closes it.
     */
    FileStagingSpace(Segment staging, SegmentOwner owner) {
        if (staging.size() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "relay.staging.capacity must be at most 2 GiB (one Java view of the staging)");
        }
        this.path = staging.shmPath();
        this.capacity = staging.size();
        this.mapped = staging.byteBuffer();
        this.owner = owner;
        this.registered = staging;
        this.free.put(0L, capacity);
        this.freeBytes = capacity;
    }

    private static MappedByteBuffer map(Path path, long capacity) {
        try {
            Files.createDirectories(path.toAbsolutePath().getParent());
            try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
                file.setLength(capacity);
                MappedByteBuffer mapped =
                        file.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, capacity);
                // Pre-fault: one write per page now instead of a page fault per page per batch.
                for (int page = 0; page < capacity; page += PAGE) {
                    mapped.put(page, mapped.get(page));
                }
                return mapped;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map staging file " + path, e);
        }
    }

    @Override
    public Path path() {
        return path;
    }

    @Override
    public long fileSize() {
        return capacity;
    }

    /**
     * First fit whatever {@code end} says: a file-staging block lives until its bytes are copied
     * into the store, so no generation outlives another here.
     */
    @Override
    public synchronized long allocate(long size, StoreClient.End end) {
        for (Entry<Long, Long> hole : free.entrySet()) {
            if (hole.getValue() >= size) {
                long offset = hole.getKey();
                long rest = hole.getValue() - size;
                free.remove(offset);
                if (rest > 0) {
                    free.put(offset + size, rest);
                }
                freeBytes -= size;
                return offset;
            }
        }
        return -1;
    }

    @Override
    public synchronized void release(long offset, long size) {
        long start = offset;
        long length = size;
        Entry<Long, Long> before = free.floorEntry(start);
        if (before != null && before.getKey() + before.getValue() == start) {
            start = before.getKey();
            length += before.getValue();
            free.remove(before.getKey());
        }
        Long after = free.get(start + length);
        if (after != null) {
            free.remove(start + length);
            length += after;
        }
        free.put(start, length);
        freeBytes += size;
    }

    @Override
    public synchronized long freeBytes() {
        return freeBytes;
    }

    @Override
    public ByteBuffer bytes(long offset, int length) {
        return mapped.slice(Math.toIntExact(offset), length);
    }

    @Override
    public boolean store(long offset, long size, List<StagingArea.Piece> pieces, Executor puts) {
        if (owner == null) {
            throw new IllegalStateException("this staging area has no store to put into");
        }
        List<String> stored = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<Void>> all = new ArrayList<>(pieces.size());
        for (StagingArea.Piece p : pieces) {
            all.add(
                    CompletableFuture.runAsync(
                            () -> {
                                owner.putFrom(p.key(), registered, p.offset(), p.size());
                                stored.add(p.key());
                            },
                            puts));
        }
        try {
            Futures.joinAll(all);
        } catch (RuntimeException e) {
            stored.forEach(owner::remove);
            throw e;
        }
        return false;
    }

    @Override
    public long[] load(List<StagingArea.Piece> pieces) {
        if (owner == null) {
            throw new IllegalStateException("this staging area has no store to read from");
        }
        List<String> keys = new ArrayList<>(pieces.size());
        List<ReadRange> into = new ArrayList<>(pieces.size());
        for (StagingArea.Piece p : pieces) {
            keys.add(p.key());
            into.add(new ReadRange(0, p.size(), registered, p.offset()));
        }
        return owner.readHeld(keys, into);
    }

    /** Unmaps nothing (the JVM does at exit) but removes the file so no stale staging remains. */
    @Override
    public void close() {
        try {
            if (registered instanceof RegisteredBuffer buffer) {
                buffer.close();
            } else if (registered instanceof Segment segment) {
                segment.close(); // removes its file
            }
        } finally {
            try {
                Files.deleteIfExists(path);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot remove staging file " + path, e);
            }
        }
    }
}
