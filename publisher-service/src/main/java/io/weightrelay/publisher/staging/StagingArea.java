package io.weightrelay.publisher.staging;

import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.service.problem.RelayException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executor;

/**
 * Where trainer ranks put the bytes they hand over: a shared-memory file carved into contiguous
 * reservations. A reservation is reserved, written by a rank, claimed by one hand-over call and
 * freed when that call ends; at most {@code capacity} bytes are reserved at once.
 *
 * <p>Two places for the bytes ({@link Mode}): inside the node's store segment (the default), so a
 * rank writes straight into the memory its objects will live in and storing copies nothing; or a
 * file of its own, from which each object is copied into the store with one put (for a segment too
 * small to also hold what is staged).
 *
 * <p>Thread safe; the bookkeeping is guarded by this object's monitor, the bytes are not (ranks and
 * the publisher touch disjoint reservations).
 */
public final class StagingArea implements AutoCloseable {

    /** Reservations start and end on this boundary so elements and cache lines stay aligned. */
    public static final int ALIGNMENT = 64;

    /** Where staged bytes live. */
    public enum Mode {
        /** Reservations are blocks of the store segment; storing publishes them in place. */
        SEGMENT,
        /** A staging file of its own; storing copies each object into the store. */
        FILE
    }

    /** A piece of a claimed reservation to store as one object. */
    public record Piece(String key, long offset, long size) {}

    private final Mode mode;
    private final StagingSpace space;
    private final long capacity;
    private final long maxBatchBytes;
    private final Duration retryAfter;
    private final Duration reservationTimeout;
    private final Clock clock;
    private final Map<String, Reservation> reservations = new HashMap<>();
    private long reservedBytes;

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

    /** Staging of the node whose store segment {@code owner} holds, in the configured mode. */
    public StagingArea(StagingProperties properties, SegmentOwner owner) {
        this(requireSpace(properties, owner), space(properties, owner), Clock.systemUTC());
    }

    /**
     * The configured space; on Mooncake always a receive segment of the data plane ({@link
     * SegmentOwner#stagesApart}), whatever the mode says: there is no in-place publish there.
     */
    private static StagingSpace space(StagingProperties properties, SegmentOwner owner) {
        if (owner != null && owner.stagesApart()) {
            return new FileStagingSpace(
                    owner.createStaging(properties.capacity().toBytes()), owner);
        }
        return properties.mode() == Mode.SEGMENT
                ? new SegmentStagingSpace(owner)
                : new FileStagingSpace(properties.path(), properties.capacity().toBytes(), owner);
    }

    private static StagingProperties requireSpace(
            StagingProperties properties, SegmentOwner owner) {
        if (properties.mode() == Mode.SEGMENT && owner != null && !owner.ownsSegment()) {
            throw new IllegalStateException(
                    "a client-only publisher (relay.segment.role=client) owns no segment to stage"
                            + " in: set relay.staging.mode=file");
        }
        return properties;
    }

    StagingArea(StagingProperties properties, StagingSpace space, Clock clock) {
        this.mode = space instanceof SegmentStagingSpace ? Mode.SEGMENT : Mode.FILE;
        this.space = space;
        this.capacity = properties.capacity().toBytes();
        this.maxBatchBytes = properties.maxBatchBytes().toBytes();
        this.retryAfter = properties.retryAfter();
        this.reservationTimeout = properties.reservationTimeout();
        this.clock = clock;
    }

    /** Staging in a file of its own without a store behind it: bookkeeping tests. */
    static StagingArea fileOnly(StagingProperties properties, Clock clock) {
        return new StagingArea(
                properties,
                new FileStagingSpace(properties.path(), properties.capacity().toBytes(), null),
                clock);
    }

    public Mode mode() {
        return mode;
    }

    /** The shared-memory file ranks map. */
    public Path path() {
        return space.path();
    }

    /** Size of that file (ranks map windows of it). */
    public long fileSize() {
        return space.fileSize();
    }

    /** The most bytes reserved at once. */
    public long capacity() {
        return capacity;
    }

    public long maxBatchBytes() {
        return maxBatchBytes;
    }

    /** A view of staged bytes, without a copy (absolute offsets are staging offsets). */
    public ByteBuffer bytes(long offset, int length) {
        return space.bytes(offset, length);
    }

    /** Bytes not reserved. */
    public synchronized long freeBytes() {
        return Math.max(0, Math.min(capacity - reservedBytes, space.freeBytes()));
    }

    /**
     * Reserves a contiguous region of at least {@code bytes} bytes.
     *
     * @throws RelayException {@code batch-too-large} above the batch bound, {@code staging-full}
     *     (429, with {@code Retry-After}) when no contiguous room is left right now
     */
    public Reservation reserve(long bytes) {
        return reserve(bytes, StoreClient.End.LOW);
    }

    /**
     * Where in the space a generation's blocks go: even generations at the low end, odd ones at the
     * high end. A store segment holds the active generation while the next one is published; at
     * alternate ends, each generation's objects stay together and the room the collected one leaves
     * is one hole, so a long-running publisher's segment does not fragment (first fit alone left no
     * contiguous 128 MiB with 60% of a segment free after a few generations).
     */
    public static StoreClient.End end(long generation) {
        return generation % 2 == 0 ? StoreClient.End.LOW : StoreClient.End.HIGH;
    }

    /**
     * Like {@link #reserve(long)}, at {@code end} of the space (see {@link #end(long)}).
     *
     * @throws RelayException {@code batch-too-large} above the batch bound, {@code staging-full}
     *     (429, with {@code Retry-After}) when no contiguous room is left right now
     */
    public synchronized Reservation reserve(long bytes, StoreClient.End end) {
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
        long offset = reservedBytes + size <= capacity ? space.allocate(size, end) : -1;
        if (offset >= 0) {
            reservedBytes += size;
            Reservation r =
                    new Reservation(
                            UUID.randomUUID().toString(), offset, size, clock.instant(), false);
            reservations.put(r.id(), r);
            return r;
        }
        long freeBytes = freeBytes();
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

    /** Frees a reservation (after its hand-over); idempotent, and a no-op once it is stored. */
    public synchronized void free(Reservation reservation) {
        if (reservations.remove(reservation.id()) == null) {
            return;
        }
        reservedBytes -= reservation.size();
        space.release(reservation.offset(), reservation.size());
    }

    /**
     * Stores pieces of a claimed reservation as objects: in segment mode they are published where
     * they are and the reservation is used up (its other bytes go back to the segment); in file
     * mode each is copied into the store on {@code puts}. Nothing of them stays stored when this
     * throws, and in segment mode the reservation is used up then too.
     */
    public void store(Reservation claimed, List<Piece> pieces, Executor puts) {
        if (mode == Mode.SEGMENT) {
            // From here the block belongs to the store, whatever happens: free() must not
            // release it again.
            synchronized (this) {
                if (reservations.remove(claimed.id()) == null) {
                    throw StagingProblems.RESERVATION_NOT_FOUND.exception(
                            "no reservation '" + claimed.id() + "'");
                }
                reservedBytes -= claimed.size();
            }
        }
        space.store(claimed.offset(), claimed.size(), pieces, puts);
    }

    /**
     * Reads stored objects into a claimed reservation, each whole at its piece's offset (all inside
     * the reservation): the reverse of {@link #store}, how an owner whose staging is apart from the
     * store (Mooncake) reads what it holds for a checkpoint save. The reservation stays the
     * caller's; {@link #free} it when done.
     *
     * @return per piece, in order, the bytes read (its size) or a negative code
     */
    public long[] load(Reservation claimed, List<Piece> pieces) {
        for (Piece p : pieces) {
            if (!claimed.contains(p.offset(), p.size())) {
                throw new IllegalArgumentException(
                        "piece " + p.key() + " lies outside reservation " + claimed.id());
            }
        }
        return space.load(pieces);
    }

    /**
     * Whether narrowing conversions write into an output block of the store ({@link
     * #reserveOutput}) rather than in place in staging (segment mode).
     */
    public boolean convertsIntoOutputBlocks() {
        return space.convertsIntoOutputBlocks();
    }

    /**
     * Reserves a block for converted bytes that are then stored where they are ({@link
     * #storeOutput}) or given back ({@link #releaseOutput}). Not counted against {@code capacity}:
     * it holds what will be stored, not what is staged.
     *
     * @throws io.weightrelay.dataplane.SegmentFullException when the segment has no room
     */
    public long reserveOutput(long bytes, StoreClient.End end) {
        return space.allocateOutput(align(bytes), end);
    }

    /** Stores pieces of an output block in place; the block is used up either way. */
    public void storeOutput(long block, List<Piece> pieces) {
        space.storeOutput(block, pieces);
    }

    /** Gives back an output block that was not stored. */
    public void releaseOutput(long block) {
        space.releaseOutput(block);
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

    public static long align(long bytes) {
        return (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    /**
     * Frees what is still reserved and closes the space (a staging file is removed, so no stale
     * staging remains).
     */
    @Override
    public void close() {
        synchronized (this) {
            for (Reservation r : List.copyOf(reservations.values())) {
                free(r);
            }
        }
        space.close();
    }
}
