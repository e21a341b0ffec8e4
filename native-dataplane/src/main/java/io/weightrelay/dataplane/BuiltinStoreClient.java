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

/** The built-in engine's {@link StoreClient} (its contract is there). */
final class BuiltinStoreClient implements StoreClient {
    private static final Duration FOREVER = Duration.ofMillis(-1);

    private final BuiltinTransferEngine engine;
    private final Metadata metadata;
    private final boolean remover;
    private final boolean storer;

    BuiltinStoreClient(
            BuiltinTransferEngine engine, Metadata metadata, boolean remover, boolean storer) {
        this.engine = engine;
        this.metadata = metadata;
        this.remover = remover;
        this.storer = storer;
    }

    @Override
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
        if (BuiltinDataplane.metadata(() -> metadata.objectExists(key))) {
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
                    BuiltinDataplane.metadata(
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

    @Override
    public long reserve(Segment own, long size) {
        return reserve(own, size, End.LOW);
    }

    @Override
    public long reserve(Segment own, long size, End end) {
        checkOwn(own, "a reservation");
        if (size <= 0) {
            throw new IllegalArgumentException("size must be > 0 for a reservation");
        }
        return engine.alloc(own.name(), size, end == End.HIGH);
    }

    @Override
    public void releaseReservation(Segment own, long block) {
        checkOwn(own, "a reservation");
        engine.free(own.name(), block).check(own.name() + " block " + block);
    }

    @Override
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
            Optional<String> exists =
                    BuiltinDataplane.metadata(() -> metadata.publishObjects(entries));
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

    @Override
    public long[] getIntoRanges(String key, List<ReadRange> ranges) {
        return read(locate(List.of(key)).get(0), ranges, null, null);
    }

    /** A {@link Located} of this engine: the directory entry and the epoch beside it. */
    private record BuiltinLocated(String key, Metadata.Entry entry) implements Located {
        @Override
        public List<String> segments() {
            return entry.object()
                    .map(o -> o.replicas().stream().map(StoredObject.Replica::segment).toList())
                    .orElse(List.of());
        }
    }

    @Override
    public List<Located> locate(List<String> keys) {
        for (String key : keys) {
            checkKey(key);
        }
        List<Metadata.Entry> entries =
                BuiltinDataplane.metadata(() -> metadata.objectsWithEpoch(keys));
        List<Located> out = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            out.add(new BuiltinLocated(keys.get(i), entries.get(i)));
        }
        return out;
    }

    @Override
    public long[] getIntoRanges(Located object, List<ReadRange> ranges) {
        return read(object, ranges, null, null);
    }

    @Override
    public ChecksummedReads getIntoRangesChecksummed(Located object, List<ReadRange> ranges) {
        int[] crcs = new int[ranges.size()];
        long[] nanos = new long[1];
        long[] bytes = read(object, ranges, crcs, nanos);
        return new ChecksummedReads(bytes, crcs, nanos[0]);
    }

    @Override
    public ChecksummedReads getIntoRangesChecksummed(String key, List<ReadRange> ranges) {
        return getIntoRangesChecksummed(locate(List.of(key)).get(0), ranges);
    }

    private long[] read(Located where, List<ReadRange> ranges, int[] crcs, long[] crcNanos) {
        if (!(where instanceof BuiltinLocated located)) {
            throw new IllegalArgumentException(
                    "object '" + where.key() + "' was located by another engine's store client");
        }
        String key = located.key();
        Metadata.Entry entry = located.entry();
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

    @Override
    public boolean remove(String key) {
        checkKey(key);
        if (!remover) {
            // Refuse before the entry is taken: a free the owner refuses would leak its space.
            Optional<StoredObject> o = BuiltinDataplane.metadata(() -> metadata.object(key));
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
        Optional<StoredObject> taken = BuiltinDataplane.metadata(() -> metadata.takeObject(key));
        taken.ifPresent(this::releaseTaken);
        return taken.isPresent();
    }

    @Override
    public int removeAll(Collection<String> keys) {
        int removed = 0;
        for (String key : keys) {
            if (remove(key)) {
                removed++;
            }
        }
        return removed;
    }

    @Override
    public boolean exists(String key) {
        checkKey(key);
        return BuiltinDataplane.metadata(() -> metadata.objectExists(key));
    }

    @Override
    public java.util.SortedSet<String> checkReadable(List<String> keys) {
        keys.forEach(this::checkKey);
        List<StoredObject> entries = BuiltinDataplane.metadata(() -> metadata.objects(keys));
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

    @Override
    public List<ObjectLocation> locations(String key) {
        checkKey(key);
        StoredObject o =
                BuiltinDataplane.metadata(() -> metadata.object(key))
                        .orElseThrow(() -> Errors.found(DataplaneError.NOT_FOUND, key));
        List<ObjectLocation> out = new ArrayList<>();
        for (StoredObject.Replica r : o.replicas()) {
            String node =
                    engine.describe(r.segment()).map(SegmentDescriptor::nodeLabel).orElse(null);
            out.add(new ObjectLocation(r.segment(), node, r.offset(), o.size()));
        }
        return out;
    }

    @Override
    public Map<String, List<ObjectLocation>> locations(List<String> keys) {
        keys.forEach(this::checkKey);
        List<StoredObject> entries = BuiltinDataplane.metadata(() -> metadata.objects(keys));
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

    @Override
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
            for (String name : BuiltinDataplane.metadata(metadata::segmentNames)) {
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
        BuiltinDataplane.metadata(() -> metadata.publishObject(back));
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
