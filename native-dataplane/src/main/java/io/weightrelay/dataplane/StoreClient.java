package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.Metadata;
import io.weightrelay.dataplane.internal.SegmentDescriptor;
import io.weightrelay.dataplane.internal.StoredObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

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
public final class StoreClient {
    private static final Duration FOREVER = Duration.ofMillis(-1);

    private final TransferEngine engine;
    private final Metadata metadata;
    private final boolean remover;
    private final boolean storer;

    StoreClient(TransferEngine engine, Metadata metadata, boolean remover, boolean storer) {
        this.engine = engine;
        this.metadata = metadata;
        this.remover = remover;
        this.storer = storer;
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
    public void putFrom(
            String key, LocalMemory source, long sourceOffset, long size, ReplicateConfig config) {
        checkKey(key);
        if (size <= 0) {
            throw new IllegalArgumentException("size must be > 0 for " + key);
        }
        if (sourceOffset < 0 || sourceOffset > source.size() - size) {
            throw new OutOfBoundsException(source.describe(), sourceOffset, size, source.size());
        }
        refuseReceiveSegments(key, config.preferredSegments());
        if (Dataplane.metadata(() -> metadata.objectExists(key))) {
            throw Errors.found(DataplaneError.EXISTS, key);
        }
        List<StoredObject.Replica> replicas = allocate(key, size, config);
        List<TransferRequest> writes = new ArrayList<>();
        for (StoredObject.Replica r : replicas) {
            writes.add(TransferRequest.write(source, sourceOffset, r.segment(), r.offset(), size));
        }
        boolean published = false;
        try {
            try (TransferBatch batch = engine.submit(writes)) {
                batch.awaitSuccess(FOREVER);
            }
            published =
                    Dataplane.metadata(
                            () ->
                                    metadata.publishObject(
                                            new StoredObject(
                                                    key, size, config.hardPin(), replicas)));
            if (!published) {
                throw Errors.found(DataplaneError.EXISTS, key);
            }
        } finally {
            if (!published) {
                release(replicas);
            }
        }
    }

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
    public long reserve(Segment own, long size) {
        return reserve(own, size, End.LOW);
    }

    /**
     * Which end of its segment a reservation takes: {@code LOW} the start of the lowest hole that
     * fits, {@code HIGH} the end of the highest. An owner that holds two generations at once (the
     * active one while the next is published) reserves them at alternate ends, so each stays
     * together and the room one leaves when collected is one hole: first fit alone scattered the
     * next generation among the active one's objects until a batch found no contiguous room with
     * 60% of the segment free.
     */
    public enum End {
        LOW,
        HIGH
    }

    /** Like {@link #reserve(Segment, long)}, at {@code end} of the segment. */
    public long reserve(Segment own, long size, End end) {
        checkOwn(own, "a reservation");
        if (size <= 0) {
            throw new IllegalArgumentException("size must be > 0 for a reservation");
        }
        return engine.alloc(own.name(), size, end == End.HIGH);
    }

    /** Frees a reserved block that will not be published. */
    public void releaseReservation(Segment own, long block) {
        checkOwn(own, "a reservation");
        engine.free(own.name(), block).check(own.name() + " block " + block);
    }

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
    public void publishInPlace(
            Segment own, long block, List<InPlaceObject> objects, boolean hardPin) {
        checkOwn(own, "in-place objects");
        List<InPlaceObject> sorted = new ArrayList<>(objects);
        sorted.sort(Comparator.comparingLong(InPlaceObject::offset));
        long[] starts = new long[sorted.size()];
        long[] lengths = new long[sorted.size()];
        Set<String> keys = new HashSet<>();
        List<StoredObject> entries = new ArrayList<>(sorted.size());
        try {
            for (int i = 0; i < sorted.size(); i++) {
                InPlaceObject o = sorted.get(i);
                checkKey(o.key());
                if (!keys.add(o.key())) {
                    throw new IllegalArgumentException("key '" + o.key() + "' appears twice");
                }
                if (o.size() <= 0) {
                    throw new IllegalArgumentException("size must be > 0 for " + o.key());
                }
                starts[i] = o.offset();
                lengths[i] = o.size();
                entries.add(
                        new StoredObject(
                                o.key(),
                                o.size(),
                                hardPin,
                                List.of(new StoredObject.Replica(own.name(), o.offset()))));
            }
        } catch (RuntimeException e) {
            engine.free(own.name(), block);
            throw e;
        }
        try {
            engine.carve(own.name(), block, starts, lengths);
        } catch (IllegalArgumentException e) {
            engine.free(own.name(), block); // the carve changed nothing
            throw e;
        }
        boolean published = false;
        try {
            Optional<String> exists = Dataplane.metadata(() -> metadata.publishObjects(entries));
            if (exists.isPresent()) {
                throw Errors.found(DataplaneError.EXISTS, exists.get());
            }
            published = true;
        } finally {
            if (!published) {
                for (long start : starts) {
                    engine.free(own.name(), start);
                }
            }
        }
    }

    private void checkOwn(Segment own, String what) {
        engine.checkOpen();
        if (own.isClosed() || !own.ownedBy(engine)) {
            throw new IllegalArgumentException(
                    own.describe() + " is not an open segment of this data plane");
        }
        if (own.kind() != SegmentKind.STORE) {
            throw new SegmentNotAllocatableException(own.name(), what);
        }
    }

    /**
     * Reads byte ranges of the object {@code key} into local memory, in one batch.
     *
     * @return per range, the bytes read (its full length) or a negative {@link DataplaneError}
     *     code; a failed range does not fail the others
     * @throws ObjectNotFoundException if no object is published under {@code key}
     */
    public long[] getIntoRanges(String key, List<ReadRange> ranges) {
        return read(locate(List.of(key)).get(0), ranges, null, null);
    }

    /**
     * Where an object was when {@link #locate(List)} looked: its directory entry with the segments
     * epoch read beside it. Read it soon; an entry removed since is read as its bytes were.
     */
    public static final class Located {
        private final String key;
        private final Metadata.Entry entry;

        private Located(String key, Metadata.Entry entry) {
            this.key = key;
            this.entry = entry;
        }

        public String key() {
            return key;
        }

        /**
         * The segments that held the object's replicas when it was looked up (none when it was not
         * in the store): whose owner a failed read of it depends on.
         */
        public List<String> segments() {
            return entry.object()
                    .map(o -> o.replicas().stream().map(StoredObject.Replica::segment).toList())
                    .orElse(List.of());
        }
    }

    /**
     * Looks up several objects in one metadata round trip, for reads that follow at once ({@link
     * #getIntoRanges(Located, List)}): a reader of many objects pays one round trip, not one per
     * object. A missing key fails only its read.
     */
    public List<Located> locate(List<String> keys) {
        for (String key : keys) {
            checkKey(key);
        }
        List<Metadata.Entry> entries = Dataplane.metadata(() -> metadata.objectsWithEpoch(keys));
        List<Located> out = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            out.add(new Located(keys.get(i), entries.get(i)));
        }
        return out;
    }

    /** {@link #getIntoRanges(String, List)} of an object {@link #locate(List)} looked up. */
    public long[] getIntoRanges(Located object, List<ReadRange> ranges) {
        return read(object, ranges, null, null);
    }

    /** {@link #getIntoRangesChecksummed(String, List)} of an object {@link #locate} looked up. */
    public ChecksummedReads getIntoRangesChecksummed(Located object, List<ReadRange> ranges) {
        int[] crcs = new int[ranges.size()];
        long[] nanos = new long[1];
        long[] bytes = read(object, ranges, crcs, nanos);
        return new ChecksummedReads(bytes, crcs, nanos[0]);
    }

    /**
     * What {@link #getIntoRangesChecksummed} read.
     *
     * @param bytes per range, as {@link #getIntoRanges} returns
     * @param crc32c per range read in full, the CRC32C of its bytes as they landed (0 otherwise)
     * @param checksumNanos time the engine's threads spent summing, all together
     */
    public record ChecksummedReads(long[] bytes, int[] crc32c, long checksumNanos) {}

    /**
     * {@link #getIntoRanges}, and the CRC32C of every range taken by the engine as it moves the
     * bytes (fused with the copy or the receive, while they are in cache), so a reader proves what
     * it read without a second pass over it.
     */
    public ChecksummedReads getIntoRangesChecksummed(String key, List<ReadRange> ranges) {
        return getIntoRangesChecksummed(locate(List.of(key)).get(0), ranges);
    }

    private long[] read(Located located, List<ReadRange> ranges, int[] crcs, long[] crcNanos) {
        String key = located.key;
        Metadata.Entry entry = located.entry;
        StoredObject object =
                entry.object().orElseThrow(() -> Errors.found(DataplaneError.NOT_FOUND, key));
        engine.catchUp(entry.segmentsEpoch());
        long[] results = new long[ranges.size()];
        List<Integer> pending = new ArrayList<>();
        for (int i = 0; i < ranges.size(); i++) {
            ReadRange r = ranges.get(i);
            boolean inObject =
                    r.objectOffset() >= 0
                            && r.length() >= 0
                            && r.objectOffset() <= object.size() - r.length();
            boolean inDestination =
                    r.destinationOffset() >= 0
                            && r.length() >= 0
                            && r.destinationOffset() <= r.destination().size() - r.length();
            if (inObject && inDestination) {
                pending.add(i);
            } else {
                results[i] = DataplaneError.OUT_OF_BOUNDS.code();
            }
        }
        for (StoredObject.Replica replica : readOrder(object)) {
            if (pending.isEmpty()) {
                break;
            }
            List<TransferRequest> reads = new ArrayList<>(pending.size());
            for (int i : pending) {
                ReadRange r = ranges.get(i);
                reads.add(
                        TransferRequest.read(
                                r.destination(),
                                r.destinationOffset(),
                                replica.segment(),
                                replica.offset() + r.objectOffset(),
                                r.length()));
            }
            List<Integer> retry = new ArrayList<>();
            try (TransferBatch batch =
                    crcs == null ? engine.submit(reads) : engine.submitChecksummed(reads)) {
                batch.await(FOREVER);
                List<TaskStatus> statuses = batch.statuses();
                for (int t = 0; t < statuses.size(); t++) {
                    TaskStatus s = statuses.get(t);
                    int index = pending.get(t);
                    if (s.state() == TaskStatus.State.COMPLETED) {
                        results[index] = s.bytesTransferred();
                        if (crcs != null) {
                            crcs[index] = batch.crc32c(t);
                        }
                    } else {
                        results[index] = s.error().code();
                        if (s.error() == DataplaneError.PEER_GONE
                                || s.error() == DataplaneError.UNKNOWN_SEGMENT) {
                            retry.add(index); // this replica is gone; try the next one
                        }
                    }
                }
                if (crcNanos != null) {
                    crcNanos[0] += batch.checksumNanos();
                }
            }
            pending = retry;
        }
        return results;
    }

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
    public boolean remove(String key) {
        checkKey(key);
        if (!remover) {
            // Refuse before the entry is taken: a free the owner refuses would leak its space.
            Optional<StoredObject> o = Dataplane.metadata(() -> metadata.object(key));
            for (StoredObject.Replica r : o.map(StoredObject::replicas).orElse(List.of())) {
                if (!engine.owns(r.segment())) {
                    throw new PermissionDeniedException(
                            key,
                            "cannot remove '"
                                    + key
                                    + "': its replica in segment '"
                                    + r.segment()
                                    + "' belongs to another engine, and only the owner or a"
                                    + " remover (DataplaneConfig.remover, control-api) frees there");
                }
            }
        }
        Optional<StoredObject> taken = Dataplane.metadata(() -> metadata.takeObject(key));
        taken.ifPresent(this::releaseTaken);
        return taken.isPresent();
    }

    /** Removes every listed key; returns how many existed. */
    public int removeAll(Collection<String> keys) {
        int removed = 0;
        for (String key : keys) {
            if (remove(key)) {
                removed++;
            }
        }
        return removed;
    }

    /** Whether an object is published under {@code key}. */
    public boolean exists(String key) {
        checkKey(key);
        return Dataplane.metadata(() -> metadata.objectExists(key));
    }

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
    public java.util.SortedSet<String> checkReadable(List<String> keys) {
        keys.forEach(this::checkKey);
        List<StoredObject> entries = Dataplane.metadata(() -> metadata.objects(keys));
        java.util.SortedSet<String> segments = new java.util.TreeSet<>();
        for (int i = 0; i < keys.size(); i++) {
            StoredObject o = entries.get(i);
            if (o == null) {
                throw Errors.found(DataplaneError.NOT_FOUND, keys.get(i));
            }
            o.replicas().forEach(r -> segments.add(r.segment()));
        }
        Map<String, DataplaneException> dead = new java.util.HashMap<>();
        for (String segment : segments) {
            try {
                engine.probe(segment);
            } catch (PeerGoneException | UnknownSegmentException e) {
                dead.put(segment, e);
            }
        }
        if (!dead.isEmpty()) {
            for (StoredObject o : entries) {
                if (o.replicas().stream().allMatch(r -> dead.containsKey(r.segment()))) {
                    throw dead.get(o.replicas().get(0).segment());
                }
            }
        }
        return segments;
    }

    /**
     * Where the object's replicas live.
     *
     * @throws ObjectNotFoundException if no object is published under {@code key}
     */
    public List<ObjectLocation> locations(String key) {
        checkKey(key);
        StoredObject o =
                Dataplane.metadata(() -> metadata.object(key))
                        .orElseThrow(() -> Errors.found(DataplaneError.NOT_FOUND, key));
        List<ObjectLocation> out = new ArrayList<>();
        for (StoredObject.Replica r : o.replicas()) {
            String node =
                    engine.describe(r.segment()).map(SegmentDescriptor::nodeLabel).orElse(null);
            out.add(new ObjectLocation(r.segment(), node, r.offset(), o.size()));
        }
        return out;
    }

    /**
     * Where the replicas of each of {@code keys} live, the directory entries read pipelined (a
     * thousand per round trip), so a whole generation costs tens of round trips, not one per
     * object.
     *
     * @return per published key, in the order given, its replicas; keys with no object are left out
     */
    public Map<String, List<ObjectLocation>> locations(List<String> keys) {
        keys.forEach(this::checkKey);
        List<StoredObject> entries = Dataplane.metadata(() -> metadata.objects(keys));
        Map<String, Optional<String>> nodes = new java.util.HashMap<>();
        Map<String, List<ObjectLocation>> out = new java.util.LinkedHashMap<>();
        for (int i = 0; i < keys.size(); i++) {
            StoredObject o = entries.get(i);
            if (o == null) {
                continue;
            }
            List<ObjectLocation> where = new ArrayList<>(o.replicas().size());
            for (StoredObject.Replica r : o.replicas()) {
                String node =
                        nodes.computeIfAbsent(
                                        r.segment(),
                                        s -> engine.describe(s).map(SegmentDescriptor::nodeLabel))
                                .orElse(null);
                where.add(new ObjectLocation(r.segment(), node, r.offset(), o.size()));
            }
            out.put(keys.get(i), where);
        }
        return out;
    }

    /** Object size in bytes. */
    public long size(String key) {
        return locations(key).get(0).size();
    }

    /**
     * A preferred segment that is a receive segment is a caller error, not a preference to skip:
     * the caller believes the object will live in memory that belongs to a transfer.
     */
    private void refuseReceiveSegments(String key, List<String> preferred) {
        for (String segment : preferred) {
            if (engine.describe(segment).map(d -> !d.store()).orElse(false)) {
                throw new SegmentNotAllocatableException(segment, key);
            }
        }
    }

    private List<StoredObject.Replica> allocate(String key, long size, ReplicateConfig config) {
        List<StoredObject.Replica> replicas = new ArrayList<>();
        List<String> refused = new ArrayList<>();
        Set<String> tried = new LinkedHashSet<>();
        // The preferred segments first: on the publish path that is the whole story.
        allocateIn(config.preferredSegments(), key, size, config, replicas, tried, refused);
        if (replicas.size() < config.replicaNum()) {
            // Fallback: this data plane's other store segments, by name. Receive segments are
            // never candidates (their bytes belong to a transfer), nor segments of other engines
            // (only an owner allocates).
            List<String> own = new ArrayList<>();
            for (String name : Dataplane.metadata(metadata::segmentNames)) {
                if (!engine.owns(name)) {
                    continue;
                }
                Optional<SegmentDescriptor> d = engine.describe(name);
                if (d.isPresent() && d.get().store()) {
                    own.add(name);
                }
            }
            allocateIn(own, key, size, config, replicas, tried, refused);
        }
        if (replicas.size() < config.replicaNum()) {
            release(replicas);
            throw new SegmentFullException(
                    "no room for object '"
                            + key
                            + "' ("
                            + size
                            + " bytes, "
                            + config.replicaNum()
                            + " replicas); refused by "
                            + refused);
        }
        return replicas;
    }

    private void allocateIn(
            List<String> segments,
            String key,
            long size,
            ReplicateConfig config,
            List<StoredObject.Replica> replicas,
            Set<String> tried,
            List<String> refused) {
        for (String segment : segments) {
            if (replicas.size() == config.replicaNum()) {
                return;
            }
            if (!tried.add(segment)) {
                continue;
            }
            if (!engine.owns(segment) && !(storer && isStoreSegment(segment))) {
                refused.add(segment + " (not this data plane's: only its owner allocates)");
                continue;
            }
            try {
                replicas.add(new StoredObject.Replica(segment, engine.alloc(segment, size)));
            } catch (SegmentFullException
                    | UnknownSegmentException
                    | PeerGoneException
                    | PermissionDeniedException e) {
                refused.add(segment + " (" + e.error() + ")");
            }
        }
    }

    private boolean isStoreSegment(String segment) {
        return engine.describe(segment).map(SegmentDescriptor::store).orElse(false);
    }

    private List<StoredObject.Replica> readOrder(StoredObject object) {
        List<StoredObject.Replica> near = new ArrayList<>();
        List<StoredObject.Replica> far = new ArrayList<>();
        for (StoredObject.Replica r : object.replicas()) {
            boolean sameNode =
                    engine.describe(r.segment())
                            .map(d -> d.nodeLabel().equals(engine.nodeLabel()))
                            .orElse(false);
            (sameNode ? near : far).add(r);
        }
        near.addAll(far);
        return near;
    }

    /** Frees allocations of a put that did not publish (own segments, or a storer's). */
    private void release(List<StoredObject.Replica> replicas) {
        for (StoredObject.Replica r : replicas) {
            engine.free(r.segment(), r.offset());
        }
    }

    /**
     * Frees the replicas of a taken entry. What a live owner refused to free is published again
     * under the same key (its bytes are untouched) and the refusal thrown; any other failure means
     * the owner or its segment is gone, and the space with it.
     */
    private void releaseTaken(StoredObject taken) {
        List<StoredObject.Replica> kept = new ArrayList<>();
        String refusal = null;
        for (StoredObject.Replica r : taken.replicas()) {
            NativeStatus status = engine.free(r.segment(), r.offset());
            if (status.is(DataplaneError.DENIED)) {
                kept.add(r);
                refusal = status.message().isEmpty() ? r.segment() : status.message();
            }
        }
        if (kept.isEmpty()) {
            return;
        }
        StoredObject back =
                new StoredObject(taken.key(), taken.size(), taken.hardPin(), List.copyOf(kept));
        Dataplane.metadata(() -> metadata.publishObject(back));
        throw new PermissionDeniedException(
                taken.key(),
                "cannot remove '"
                        + taken.key()
                        + "': the owner of segment '"
                        + kept.get(0).segment()
                        + "' refused to free it ("
                        + refusal
                        + "), so the object stays stored and published"
                        + PermissionDeniedException.HINT);
    }

    private void checkKey(String key) {
        engine.checkOpen();
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("key must not be empty");
        }
    }
}
