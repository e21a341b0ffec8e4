package io.weightrelay.publisher.staging;

import io.weightrelay.service.problem.RelayException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Map.Entry;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The staging file, mapped once and pre-faulted (first touches of fresh {@code /dev/shm} pages cost
 * ten times a warm copy), carved into contiguous reservations by first fit. A reservation is
 * reserved, written by a rank, claimed by one hand-over call and freed when that call ends.
 *
 * <p>Thread safe; the bookkeeping is guarded by this object's monitor, the bytes are not (ranks and
 * the publisher touch disjoint reservations).
 */
public final class StagingArea implements AutoCloseable {

    /** Reservations start and end on this boundary so elements and cache lines stay aligned. */
    public static final int ALIGNMENT = 64;

    private static final int PAGE = 4096;

    private final Path path;
    private final MappedByteBuffer buffer;
    private final long capacity;
    private final long maxBatchBytes;
    private final Duration retryAfter;
    private final Duration reservationTimeout;
    private final Clock clock;
    private final TreeMap<Long, Long> free = new TreeMap<>();
    private final Map<String, Reservation> reservations = new HashMap<>();
    private long freeBytes;

    /** A reserved region; {@code claimed} while a hand-over uses it. */
    public record Reservation(
            String id, long offset, long size, Instant reservedAt, boolean claimed) {
        Reservation claim() {
            return new Reservation(id, offset, size, reservedAt, true);
        }

        /** Whether [offset, offset + length) lies inside this reservation. */
        public boolean contains(long start, long length) {
            return start >= offset && length >= 0 && start + length <= offset + size;
        }
    }

    public StagingArea(StagingProperties properties) {
        this(properties, Clock.systemUTC());
    }

    StagingArea(StagingProperties properties, Clock clock) {
        this.path = properties.path();
        this.capacity = properties.capacity().toBytes();
        this.maxBatchBytes = properties.maxBatchBytes().toBytes();
        this.retryAfter = properties.retryAfter();
        this.reservationTimeout = properties.reservationTimeout();
        this.clock = clock;
        this.buffer = map(path, capacity);
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

    /** The shared-memory file ranks map. */
    public Path path() {
        return path;
    }

    public long capacity() {
        return capacity;
    }

    public long maxBatchBytes() {
        return maxBatchBytes;
    }

    /** The whole mapping (absolute offsets are staging offsets); a fresh view per call. */
    public ByteBuffer buffer() {
        return buffer.duplicate().clear();
    }

    /** Bytes not reserved. */
    public synchronized long freeBytes() {
        return freeBytes;
    }

    /**
     * Reserves a contiguous region of at least {@code bytes} bytes.
     *
     * @throws RelayException {@code batch-too-large} above the batch bound, {@code staging-full}
     *     (429, with {@code Retry-After}) when no contiguous room is left right now
     */
    public synchronized Reservation reserve(long bytes) {
        if (bytes <= 0 || bytes > maxBatchBytes) {
            throw StagingProblems.BATCH_TOO_LARGE
                    .exception(
                            "a reservation holds 1 to "
                                    + maxBatchBytes
                                    + " bytes (one batch); asked for "
                                    + bytes)
                    .with("maxBatchBytes", maxBatchBytes);
        }
        long size = align(bytes);
        reclaimExpired();
        for (Entry<Long, Long> hole : free.entrySet()) {
            if (hole.getValue() >= size) {
                long offset = hole.getKey();
                long rest = hole.getValue() - size;
                free.remove(offset);
                if (rest > 0) {
                    free.put(offset + size, rest);
                }
                freeBytes -= size;
                Reservation r =
                        new Reservation(
                                UUID.randomUUID().toString(), offset, size, clock.instant(), false);
                reservations.put(r.id(), r);
                return r;
            }
        }
        RelayException full =
                StagingProblems.STAGING_FULL
                        .exception(
                                "no contiguous "
                                        + size
                                        + " bytes free in staging ("
                                        + freeBytes
                                        + " of "
                                        + capacity
                                        + " free); retry later")
                        .with("freeBytes", freeBytes);
        full.getHeaders().set("Retry-After", Long.toString(Math.max(1, retryAfter.toSeconds())));
        full.getHeaders().set("Retry-After-Ms", Long.toString(retryAfter.toMillis()));
        throw full;
    }

    /**
     * Takes the reservation for one hand-over: nobody else can claim or release it until {@link
     * #free} gives it back.
     */
    public synchronized Reservation claim(String id) {
        Reservation r = reservations.get(id);
        if (r == null) {
            throw StagingProblems.RESERVATION_NOT_FOUND.exception(
                    "no reservation '" + id + "' (released, handed over, or reclaimed)");
        }
        if (r.claimed()) {
            throw StagingProblems.RESERVATION_BUSY.exception(
                    "reservation '" + id + "' is being handed over by another call");
        }
        Reservation claimed = r.claim();
        reservations.put(id, claimed);
        return claimed;
    }

    /** Gives a reservation back without a hand-over. */
    public synchronized void release(String id) {
        Reservation r = reservations.get(id);
        if (r == null) {
            throw StagingProblems.RESERVATION_NOT_FOUND.exception("no reservation '" + id + "'");
        }
        if (r.claimed()) {
            throw StagingProblems.RESERVATION_BUSY.exception(
                    "reservation '" + id + "' is being handed over; it is freed when that ends");
        }
        free(r);
    }

    /** Frees a reservation (after its hand-over); idempotent. */
    public synchronized void free(Reservation reservation) {
        if (reservations.remove(reservation.id()) == null) {
            return;
        }
        long offset = reservation.offset();
        long size = reservation.size();
        Entry<Long, Long> before = free.floorEntry(offset);
        if (before != null && before.getKey() + before.getValue() == offset) {
            offset = before.getKey();
            size += before.getValue();
            free.remove(before.getKey());
        }
        Long after = free.get(offset + size);
        if (after != null) {
            free.remove(offset + size);
            size += after;
        }
        free.put(offset, size);
        freeBytes += reservation.size();
    }

    /** Number of live reservations. */
    public synchronized int reservationCount() {
        return reservations.size();
    }

    private void reclaimExpired() {
        Instant cutoff = clock.instant().minus(reservationTimeout);
        Iterator<Reservation> it = Map.copyOf(reservations).values().iterator();
        while (it.hasNext()) {
            Reservation r = it.next();
            if (!r.claimed() && r.reservedAt().isBefore(cutoff)) {
                free(r);
            }
        }
    }

    static long align(long bytes) {
        return (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    /** Unmaps nothing (the JVM does at exit) but removes the file so no stale staging remains. */
    @Override
    public void close() {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove staging file " + path, e);
        }
    }
}
