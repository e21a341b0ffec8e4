package io.weightrelay.dataplane;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;

/**
 * Mooncake-Store-shaped object store over the registered segments: immutable objects under string
 * keys, each stored as one or more replicas in segments, directory in Redis.
 *
 * <ul>
 *   <li>An object is visible only once its bytes are complete: bytes are written first, then the
 *       directory entry is published atomically (put-if-absent).
 *   <li>Only a segment's owner allocates in it: a put places replicas in store segments of this
 *       data plane, or, when this data plane is a {@linkplain DataplaneConfig#storer() storer} (a
 *       client-only publisher that owns no store memory), in the preferred store segments of other
 *       engines, whose owners allocate on its request over their control channel (other roles are
 *       refused). Removing frees at the owner: locally, or over its control channel when this data
 *       plane is a {@linkplain DataplaneConfig#remover() remover} (control-api).
 *   <li>Preferred segments are a preference: a full one yields a replica elsewhere.
 *   <li>Only {@linkplain SegmentKind#STORE store segments} hold objects. {@linkplain
 *       SegmentKind#RECEIVE Receive segments} (transfer targets such as receive buffers) are never
 *       allocated from, not even when every store segment is full, and cannot be preferred.
 * </ul>
 *
 * <p>Ownership: a view owned by its {@link Dataplane}. Thread safe. Removing an object while
 * another thread reads it may hand the reader bytes of a later object that reused the space:
 * callers remove only objects nobody reads any more (aborted or retired generations).
 */
public sealed interface StoreClient permits BuiltinStoreClient, MooncakeStoreClient {
    /**
     * Which end of its segment a reservation takes: {@code LOW} the start of the lowest hole that
     * fits, {@code HIGH} the end of the highest. An owner that holds two generations at once (the
     * active one while the next is published) reserves them at alternate ends, so each stays
     * together and the room one leaves when collected is one hole: first fit alone scattered the
     * next generation among the active one's objects until a batch found no contiguous room with
     * 60% of the segment free.
     */
    enum End {
        LOW,
        HIGH
    }

    /**
     * What {@link #getIntoRangesChecksummed} read.
     *
     * @param bytes per range, as {@link #getIntoRanges} returns
     * @param crc32c per range read in full, the CRC32C of its bytes as they landed (0 otherwise)
     * @param checksumNanos time the engine's threads spent summing, all together
     */
    record ChecksummedReads(long[] bytes, int[] crc32c, long checksumNanos) {}

    /**
     * Where an object was when {@link #locate(List)} looked: its directory entry, read with
     * whatever the engine needs beside it. Read it soon; an entry removed since is read as its
     * bytes were. Only the store client that located it reads it.
     */
    interface Located {
        String key();

        /**
         * The segments that held the object's replicas when it was looked up (none when it was not
         * in the store): whose owner a failed read of it depends on.
         */
        List<String> segments();
    }

    /**
     * Stores {@code size} bytes of {@code source} at {@code sourceOffset} under {@code key}.
     *
     * @throws ObjectExistsException if the key is already published
     * @throws SegmentFullException if fewer than {@code replicaNum} store segments of this data
     *     plane (for a storer: also the preferred ones of other engines) have room (receive
     *     segments never count)
     * @throws SegmentNotAllocatableException if {@code config} prefers a receive segment
     * @throws PeerGoneException if a replica's owner died during the write (nothing is published)
     */
    void putFrom(
            String key, LocalMemory source, long sourceOffset, long size, ReplicateConfig config);

    /**
     * Reserves {@code size} contiguous bytes of an own store segment for bytes written in place (by
     * this process or another one of the node that maps the segment's file): the space is the
     * caller's, invisible to readers, until {@link #publishInPlace} turns it into objects or {@link
     * #releaseReservation} frees it. Mooncake's analogue is the two-phase put (start: allocate,
     * end: publish); here the writer is the trainer itself, so publishing copies nothing.
     *
     * @return the block's offset in the segment (its key for the calls above)
     * @throws SegmentFullException if the segment has no contiguous room (no fallback: the bytes
     *     are to be written here)
     * @throws SegmentNotAllocatableException if {@code own} is a receive segment
     */
    long reserve(Segment own, long size);

    /** Like {@link #reserve(Segment, long)}, at {@code end} of the segment. */
    long reserve(Segment own, long size, End end);

    /** Frees a reserved block that will not be published. */
    void releaseReservation(Segment own, long block);

    /**
     * Publishes objects whose bytes were written in place into the reserved {@code block} of {@code
     * own}: each keeps its bytes where they are (no copy, no transport byte), the parts of the
     * block no object covers are freed, and all directory entries are published with one atomic
     * Redis call, all or none. Either way the block stops being the caller's: on success the
     * objects own their bytes (each freed by {@link #remove}); on any failure everything is freed.
     *
     * @throws IllegalArgumentException for empty or duplicate keys, empty objects, or objects
     *     overlapping each other or leaving the block
     * @throws ObjectExistsException if a key is already published (none is published then)
     */
    void publishInPlace(Segment own, long block, List<InPlaceObject> objects, boolean hardPin);

    /**
     * Reads byte ranges of the object {@code key} into local memory, in one batch.
     *
     * @return per range, the bytes read (its full length) or a negative {@link DataplaneError}
     *     code; a failed range does not fail the others
     * @throws ObjectNotFoundException if no object is published under {@code key}
     */
    long[] getIntoRanges(String key, List<ReadRange> ranges);

    /**
     * Looks up several objects in one metadata round trip, for reads that follow at once ({@link
     * #getIntoRanges(Located, List)}): a reader of many objects pays one round trip, not one per
     * object. A missing key fails only its read.
     */
    List<Located> locate(List<String> keys);

    /** {@link #getIntoRanges(String, List)} of an object {@link #locate(List)} looked up. */
    long[] getIntoRanges(Located object, List<ReadRange> ranges);

    /** {@link #getIntoRangesChecksummed(String, List)} of an object {@link #locate} looked up. */
    ChecksummedReads getIntoRangesChecksummed(Located object, List<ReadRange> ranges);

    /**
     * {@link #getIntoRanges}, and the CRC32C of every range taken by the engine as it moves the
     * bytes (fused with the copy or the receive, while they are in cache), so a reader proves what
     * it read without a second pass over it.
     */
    ChecksummedReads getIntoRangesChecksummed(String key, List<ReadRange> ranges);

    /**
     * Removes the object: its directory entry atomically, then its replicas' space (best effort:
     * space of a dead owner is gone with it). A live owner that refuses the free ({@code DENIED}:
     * this engine has no secret, or lacks the remover role) would leave the bytes allocated with no
     * entry to free them by, for as long as the owner lives; so the entry is put back for those
     * replicas and the refusal is thrown: the object stays whole and readable, and a later remove
     * frees it once the configuration is fixed.
     *
     * @return true if an object was removed
     * @throws PermissionDeniedException when an owner refused to free a replica (the object is
     *     still stored there)
     */
    boolean remove(String key);

    /** Removes every listed key; returns how many existed. */
    int removeAll(Collection<String> keys);

    /** Whether an object is published under {@code key}. */
    boolean exists(String key);

    /**
     * Checks, before a reader touches anything, that it could read all of {@code keys}: each is
     * published and has a replica whose owner answers now ({@link TransferEngine#probe}, once per
     * segment). Directory entries are read pipelined, a thousand per round trip.
     *
     * @return the segments holding the objects, sorted
     * @throws ObjectNotFoundException naming the first missing key (in the order given)
     * @throws PeerGoneException naming a segment whose owner is gone and that holds the only
     *     replica of some key
     */
    SortedSet<String> checkReadable(List<String> keys);

    /**
     * Where the object's replicas live.
     *
     * @throws ObjectNotFoundException if no object is published under {@code key}
     */
    List<ObjectLocation> locations(String key);

    /**
     * Where the replicas of each of {@code keys} live, the directory entries read pipelined (a
     * thousand per round trip), so a whole generation costs tens of round trips, not one per
     * object.
     *
     * @return per published key, in the order given, its replicas; keys with no object are left out
     */
    Map<String, List<ObjectLocation>> locations(List<String> keys);

    /** Object size in bytes. */
    long size(String key);
}
