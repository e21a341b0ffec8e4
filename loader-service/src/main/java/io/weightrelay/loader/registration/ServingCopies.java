package io.weightrelay.loader.registration;

import io.weightrelay.dataplane.Segment;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The weights a staged direct worker's engine serves from: one shared-memory file beside each of
 * its receive segments ({@code <segment file>.serving}, the same size). Peers write a new
 * generation into the receive segment while the engine serves from this copy; the install copies
 * the segment into it, locally, once the whole group fetched and verified. It lives and dies with
 * its receive segment.
 *
 * <p>The install is the engine's whole pause, so it copies and does nothing else: this process maps
 * each copy once, when it is made, and touches every page then, and the install copies into that
 * mapping with the C library's {@code memcpy} ({@link Segment#copyOut}). Mapping both files again
 * for every install faulted every page in twice and copied at a third of the rate (issue 51: staged
 * {@code pause_s} 1.13 s of a 2.83 s update). A copy's mapping is unmapped when the copy is
 * removed, not left to a garbage collection that would hold its memory in {@code /dev/shm}.
 */
public final class ServingCopies {
    /** Mapped in pieces: a mapping holds at most 2 GiB. */
    private static final int CHUNK = 256 << 20;

    /** The copies this process made and has not removed, mapped: removed with its data plane. */
    private static final Map<Path, Mapped> MADE = new ConcurrentHashMap<>();

    private ServingCopies() {}

    /** The serving copy of the receive segment in {@code segmentFile}. */
    public static Path of(Path segmentFile) {
        return segmentFile.resolveSibling(segmentFile.getFileName() + ".serving");
    }

    /**
     * Makes the serving copy of {@code segmentFile} ({@code size} bytes) if it is missing, maps it
     * and touches every page of it so the install pays no page faults. A copy of that size already
     * there (kept from the engine's previous registration) keeps the weights it holds.
     */
    public static void create(Path segmentFile, long size) {
        mapped(of(segmentFile), size);
    }

    /**
     * Copies the first {@code size} bytes of {@code segment} into its serving copy (made first when
     * missing): the install of a staged worker.
     *
     * @return the bytes copied
     */
    public static long install(Segment segment, long size) {
        return mapped(of(segment.shmPath()), size).copyFrom(segment);
    }

    /** Removes the serving copy of {@code segmentFile}, if any. */
    public static void delete(Path segmentFile) {
        if (segmentFile == null) {
            return;
        }
        try {
            remove(of(segmentFile));
        } catch (IOException e) {
            throw new UncheckedIOException("removing the serving copy of " + segmentFile, e);
        }
    }

    /**
     * Removes every serving copy this process made and still holds: a loader that shuts down leaves
     * no file in shared memory, as its data plane removes its receive segments' files. (A loader
     * killed with SIGKILL still leaves them, as it leaves its segment files.)
     *
     * @return the copies that could not be removed, with why
     */
    public static List<String> deleteAll() {
        List<String> failed = new ArrayList<>();
        for (Path copy : List.copyOf(MADE.keySet())) {
            try {
                remove(copy);
            } catch (IOException e) {
                failed.add(copy + ": " + e);
            }
        }
        return failed;
    }

    /** Unmaps {@code copy} if this process holds it mapped, then removes its file if any. */
    private static void remove(Path copy) throws IOException {
        Mapped mapped = MADE.remove(copy);
        if (mapped != null) {
            mapped.unmap();
        }
        Files.deleteIfExists(copy);
    }

    /** The mapping of {@code copy} at {@code size}, made (and the file with it) when missing. */
    private static Mapped mapped(Path copy, long size) {
        Mapped mapped = MADE.get(copy);
        if (mapped != null && mapped.size == size && Files.exists(copy)) {
            return mapped;
        }
        synchronized (MADE) {
            mapped = MADE.get(copy);
            if (mapped != null && mapped.size == size && Files.exists(copy)) {
                return mapped;
            }
            if (mapped != null) {
                MADE.remove(copy);
                mapped.unmap();
            }
            mapped = Mapped.open(copy, size);
            MADE.put(copy, mapped);
            return mapped;
        }
    }

    /**
     * One serving copy mapped into this process, in pieces. Copies into it and its unmapping
     * exclude each other, so no copy ever touches an unmapped piece.
     */
    private static final class Mapped {
        private final Path file;
        private final long size;
        private final List<MappedByteBuffer> pieces;
        private boolean unmapped;

        private Mapped(Path file, long size, List<MappedByteBuffer> pieces) {
            this.file = file;
            this.size = size;
            this.pieces = pieces;
        }

        /**
         * Maps {@code file} at {@code size} bytes, made (zeroed) when missing or of another size,
         * every page touched: written in a new file, read in one that holds served weights.
         */
        static Mapped open(Path file, long size) {
            List<MappedByteBuffer> pieces = new ArrayList<>();
            try (FileChannel out =
                    FileChannel.open(
                            file,
                            StandardOpenOption.CREATE,
                            StandardOpenOption.READ,
                            StandardOpenOption.WRITE)) {
                boolean kept = out.size() == size;
                if (!kept) {
                    out.truncate(0);
                }
                for (long at = 0; at < size; at += CHUNK) {
                    int length = (int) Math.min(CHUNK, size - at);
                    MappedByteBuffer piece = out.map(FileChannel.MapMode.READ_WRITE, at, length);
                    pieces.add(piece);
                    if (kept) {
                        piece.load();
                    } else {
                        for (int page = 0; page < length; page += 4096) {
                            piece.put(page, (byte) 0);
                        }
                    }
                }
                return new Mapped(file, size, pieces);
            } catch (IOException e) {
                pieces.forEach(Mapped::release);
                throw new UncheckedIOException("creating the serving copy " + file + " failed", e);
            }
        }

        synchronized long copyFrom(Segment segment) {
            if (unmapped) {
                throw new IllegalStateException("the serving copy " + file + " was removed");
            }
            long at = 0;
            for (MappedByteBuffer piece : pieces) {
                segment.copyOut(at, piece.duplicate().clear());
                at += piece.capacity();
            }
            return size;
        }

        synchronized void unmap() {
            if (!unmapped) {
                unmapped = true;
                pieces.forEach(Mapped::release);
            }
        }

        /**
         * Unmaps {@code piece} now ({@code sun.misc.Unsafe#invokeCleaner}, the JDK's supported way
         * for a direct buffer whose owner knows no one touches it again).
         */
        private static void release(MappedByteBuffer piece) {
            UNSAFE.invokeCleaner(piece);
        }
    }

    private static final sun.misc.Unsafe UNSAFE = unsafe();

    private static sun.misc.Unsafe unsafe() {
        try {
            Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            return (sun.misc.Unsafe) f.get(null);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
