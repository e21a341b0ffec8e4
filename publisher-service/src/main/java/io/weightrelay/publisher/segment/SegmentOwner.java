package io.weightrelay.publisher.segment;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.dataplane.InPlaceObject;
import io.weightrelay.dataplane.LocalMemory;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.ObjectNotFoundException;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.dataplane.DataplaneSettingsException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's data plane and its store segment. Objects are stored one pinned copy each: published
 * in place from a reserved block of the own segment (no copy), or put from registered memory with
 * {@code replicaNum=1, preferredSegments=[own], hardPin=true}, which the store places elsewhere
 * only when the own segment is full.
 *
 * <p>On the Mooncake engine ({@code relay.dataplane.engine=mooncake}) the store capacity is the
 * {@code relay.segment.size} bytes its agent mounts, where Mooncake's master allocates: there is no
 * in-place publish, so ranks stage in a receive segment ({@link #createStaging}) and each object is
 * put from it with {@code replicaNum=1}, the agent's own segment preferred, hard pinned.
 *
 * <p>Restart safety: a segment is always created new (empty allocator), so directory entries that
 * still list it from a previous owner (killed, or stopped while the store kept their keys) are
 * purged from the directory before anything is allocated; their generations become unreadable (a
 * loader's prepare refuses missing objects, so loaders stay on their generation) instead of ever
 * pointing at bytes the new owner writes later.
 *
 * <p>Ownership: opened at start-up, closed with the application context (closing unpublishes and
 * removes the segment). Thread safe.
 */
public final class SegmentOwner implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SegmentOwner.class);

    private final SegmentProperties properties;
    private final DataplaneSettings settings;
    private final Dataplane dataplane;
    private final Segment segment;
    private final boolean mooncake;
    private volatile ReplicateConfig preferLocal;
    private final List<String> lostOnRestart;
    private final SegmentAllocations allocations = new SegmentAllocations();

    /**
     * On Mooncake, {@code model/generation} -> objects put into the agent's segment, recorded
     * before each put: what an agent's death takes along ({@link #capacityLost}). One entry per
     * generation; a collected one stays until a death reports it (control-api, which no longer
     * knows it, answers not found and it is dropped).
     */
    private final Map<String, Long> storedInAgent = new ConcurrentHashMap<>();

    /** Generations whose objects an agent's death took along, with how many objects each. */
    public record Lost(Map<String, Long> generations, String why) {}

    /**
     * Opens the data plane {@code relay.dataplane.*} describes, on node {@code relay.segment.node},
     * and creates the segment in it.
     */
    public SegmentOwner(SegmentProperties properties, DataplaneSettings settings) {
        this.properties = properties;
        this.settings = settings;
        this.mooncake = settings.engine() == DataplaneEngine.MOONCAKE;
        if (mooncake && !properties.ownsSegment()) {
            throw new DataplaneSettingsException(
                    "relay.segment.role="
                            + properties.role()
                            + " on relay.dataplane.engine=mooncake: a Mooncake publisher mounts its"
                            + " own store capacity (relay.segment.size) in its agent; use trainer or"
                            + " storage-unit");
        }
        long started = System.nanoTime();
        this.dataplane =
                Dataplane.open(
                        properties.ownsSegment()
                                ? settings.storeOwnerConfig(
                                        properties.node(), properties.size().toBytes())
                                : settings.storerConfig(properties.node()));
        if (mooncake) {
            // The agent mounted the capacity; Mooncake's master allocates in it. A put naming no
            // segment prefers the agent's own (MooncakeStoreClient), hard pinned, one replica.
            this.segment = null;
            this.lostOnRestart = List.of();
            this.preferLocal = new ReplicateConfig(1, List.of(), true);
            log.info(
                    "publisher '{}' of node '{}' ready on Mooncake in {} ms ({} bytes mounted in"
                            + " its agent); engine {}",
                    properties.name(),
                    properties.node(),
                    (System.nanoTime() - started) / 1_000_000,
                    properties.size().toBytes(),
                    endpoint());
            return;
        }
        if (!properties.ownsSegment()) {
            // Client only: no segment, so no save ever waits on this process. Puts go to the
            // storage units, which allocate for them (the storer role; SegmentHeartbeat keeps
            // the preference current).
            this.segment = null;
            this.lostOnRestart = List.of();
            this.preferLocal = new ReplicateConfig(1, List.of(), true);
            log.info(
                    "client-only publisher '{}' of node '{}' (no segment) ready in {} ms; engine {}",
                    properties.name(),
                    properties.node(),
                    (System.nanoTime() - started) / 1_000_000,
                    endpoint());
            return;
        }
        try {
            // The data plane purges the directory entries a previous incarnation left in this
            // name before the new file exists, and says which they were.
            this.segment = dataplane.createSegment(properties.name(), properties.size().toBytes());
        } catch (RuntimeException e) {
            dataplane.close();
            throw e;
        }
        this.lostOnRestart = segment.purgedOnCreate();
        if (!lostOnRestart.isEmpty()) {
            log.warn(
                    "segment '{}' was re-created: {} objects a previous owner stored in it are gone"
                            + " with it and were purged from the store (generations {}); those"
                            + " generations are unreadable: loaders stay on the one they serve,"
                            + " restore them from a checkpoint or publish a new one",
                    properties.name(),
                    lostOnRestart.size(),
                    generations(lostOnRestart));
        }
        this.preferLocal = ReplicateConfig.preferLocal(segment.name());
        log.info(
                "segment '{}' ({} bytes) of node '{}' ready in {} ms; engine {}",
                segment.name(),
                segment.size(),
                properties.node(),
                (System.nanoTime() - started) / 1_000_000,
                endpoint());
    }

    /**
     * Keys of the objects a previous owner of this segment had stored, purged from the store's
     * directory when this owner re-created the segment (empty on a first start).
     */
    public List<String> lostOnRestart() {
        return lostOnRestart;
    }

    /** The {@code model/generation} of each store key ({@code {model}/{generation}/{fragment}}). */
    static List<String> generations(List<String> keys) {
        TreeSet<String> out = new TreeSet<>();
        for (String key : keys) {
            out.add(generationOf(key));
        }
        return List.copyOf(out);
    }

    /** The {@code model/generation} of a store key. */
    static String generationOf(String key) {
        int first = key.indexOf('/');
        int second = first < 0 ? -1 : key.indexOf('/', first + 1);
        return second < 0 ? key : key.substring(0, second);
    }

    /**
     * Publishes this segment's descriptor again if Redis lost it (restarted without its data), so
     * that readers find the segment of the objects published from now on.
     *
     * @return whether it had to be published again
     */
    public boolean reannounce() {
        return !dataplane.reannounceSegments().isEmpty();
    }

    /**
     * On Mooncake, asks the agent whether it still holds what was put into its segment ({@link
     * Dataplane#storeCapacityLost}; a dead agent is started again, mounting a new, empty segment).
     * When an agent died since the last check, every generation put into its segment so far is
     * answered, once, with the death: its objects are gone, and control-api must be told. A
     * generation put into the new segment before this check noticed the death is answered too: the
     * loss is over-reported then (the generation is not served; the next publish reaches the
     * engines), never missed. Empty on the built-in engine, whose segment lives and dies with this
     * process.
     */
    public Optional<Lost> capacityLost() {
        if (!mooncake) {
            return Optional.empty();
        }
        List<String> deaths = dataplane.storeCapacityLost();
        if (deaths.isEmpty()) {
            return Optional.empty();
        }
        Map<String, Long> lost = new TreeMap<>();
        for (String g : List.copyOf(storedInAgent.keySet())) {
            Long objects = storedInAgent.remove(g);
            if (objects != null) {
                lost.put(g, objects);
            }
        }
        String why = String.join("; ", deaths);
        log.warn(
                "publisher '{}': {}; generations {} had objects in it and are lost",
                properties.name(),
                why,
                lost.keySet());
        return Optional.of(new Lost(lost, why));
    }

    /** The segment's name; a client-only publisher's own name (it owns no segment). */
    public String segmentName() {
        return segment == null ? properties.name() : segment.name();
    }

    /**
     * Whether this publisher owns store capacity ({@code relay.segment.role} is not client): a
     * segment of its own, or on Mooncake the capacity its agent mounted.
     */
    public boolean ownsSegment() {
        return segment != null || mooncake;
    }

    /**
     * Whether ranks stage in memory of their own that puts copy from ({@link #createStaging}):
     * always on Mooncake, which allocates only in its agent's mounted segment, so nothing can be
     * written where its object will live.
     */
    public boolean stagesApart() {
        return mooncake;
    }

    /**
     * Shared memory of {@code size} bytes that ranks write staged bytes into and {@link #putFrom}
     * copies from: a receive segment of the data plane (on Mooncake, a file its agent maps and
     * registers, so a put reads it in place). The caller closes it before this owner.
     */
    public Segment createStaging(long size) {
        return dataplane.createReceiveSegment(properties.name() + "-staging", size);
    }

    /**
     * Where a client-only publisher's puts go: these segments in order (the storage units of its
     * own node first), else any segment with room.
     */
    public void preferSegments(List<String> segments) {
        preferLocal = new ReplicateConfig(1, segments, true);
    }

    /** The segments puts prefer, in order. */
    public List<String> preferredSegments() {
        return preferLocal.preferredSegments();
    }

    public String node() {
        return properties.node();
    }

    public long size() {
        return mooncake ? properties.size().toBytes() : segment == null ? 0 : segment.size();
    }

    /** Free bytes of the own segment; 0 on Mooncake, whose master alone knows them. */
    public long freeBytes() {
        return segment == null ? 0 : segment.freeBytes();
    }

    /** {@code host:port} peers reach this node's Transfer Engine at (its advertise host). */
    public String endpoint() {
        return settings.endpoint(dataplane.tcpPort());
    }

    /**
     * On Mooncake, the transport endpoint the master names for replicas in this publisher's mounted
     * segment (so a reader elsewhere can tell which objects landed locally); empty on the built-in
     * engine, which names replicas by segment.
     */
    public Optional<String> storeEndpoint() {
        return dataplane.storeEndpoint();
    }

    public Counters counters() {
        return dataplane.counters();
    }

    /** The segment's shared-memory file (ranks of the node map it in segment staging). */
    public Path shmPath() {
        return requireSegment().shmPath();
    }

    private Segment requireSegment() {
        if (segment == null) {
            throw new IllegalStateException(
                    "publisher '" + properties.name() + "' is client-only and owns no segment");
        }
        return segment;
    }

    /** A view of [offset, offset + length) of the segment, without a copy. */
    public ByteBuffer bytes(long offset, int length) {
        return requireSegment().byteBuffer(offset, length);
    }

    /**
     * Reserves a block of the segment for bytes written in place.
     *
     * @throws io.weightrelay.dataplane.SegmentFullException when no contiguous room is left
     */
    public long reserve(long size) {
        return reserve(size, StoreClient.End.LOW);
    }

    /** Like {@link #reserve(long)}, at {@code end} of the segment. */
    public long reserve(long size, StoreClient.End end) {
        Segment own = requireSegment();
        allocations.beginUntracked();
        try {
            return dataplane.store().reserve(own, size, end);
        } catch (RuntimeException e) {
            allocations.endUntracked();
            throw e;
        }
    }

    /** Frees a reserved block that was not published. */
    public void releaseReservation(long block) {
        try {
            dataplane.store().releaseReservation(segment, block);
        } finally {
            allocations.endUntracked();
        }
    }

    /**
     * Publishes objects written in place into the reserved {@code block}, pinned, all or none; the
     * block is used up either way (see {@link
     * io.weightrelay.dataplane.StoreClient#publishInPlace}).
     */
    public void publishInPlace(long block, List<InPlaceObject> objects) {
        try {
            dataplane.store().publishInPlace(segment, block, objects, true);
        } catch (RuntimeException e) {
            allocations.endUntracked();
            throw e;
        }
        List<SegmentAllocations.Allocation> stored = new ArrayList<>(objects.size());
        for (InPlaceObject o : objects) {
            stored.add(new SegmentAllocations.Allocation(o.key(), o.offset(), o.size()));
        }
        allocations.recordAndEnd(stored);
    }

    /** Registers memory puts copy from; the caller closes it before this owner. */
    public RegisteredBuffer register(ByteBuffer memory) {
        return dataplane.registerBuffer(memory);
    }

    /**
     * Stores {@code size} bytes of {@code source} at {@code offset} under {@code key}: one copy
     * into the segment that takes it (the own one unless it is full).
     *
     * @throws io.weightrelay.dataplane.DataplaneException when no segment has room, the key exists,
     *     or a peer died during the write (nothing is stored then)
     */
    public void putFrom(String key, LocalMemory source, long offset, long size) {
        if (mooncake) {
            // recorded first: an agent that dies from here on takes this object's generation too
            storedInAgent.merge(generationOf(key), 1L, Long::sum);
        }
        if (segment == null) {
            dataplane.store().putFrom(key, source, offset, size, preferLocal);
            return;
        }
        allocations.beginUntracked();
        List<SegmentAllocations.Allocation> stored = new ArrayList<>(1);
        try {
            dataplane.store().putFrom(key, source, offset, size, preferLocal);
            // Where it went (the own segment unless that was full): recorded while the put still
            // counts as untracked, so no reclaim runs in between.
            for (ObjectLocation l : dataplane.store().locations(key)) {
                if (l.segment().equals(segment.name())) {
                    stored.add(new SegmentAllocations.Allocation(key, l.offset(), size));
                }
            }
        } finally {
            allocations.recordAndEnd(stored);
        }
    }

    /**
     * The segment holding the object's (first) replica, or empty if it is not stored. On Mooncake,
     * which names a replica by its owner's transport endpoint only, that endpoint ({@code
     * BatchStore} asks only about objects a put placed outside the own segment).
     */
    public Optional<String> segmentOf(String key) {
        if (mooncake) {
            List<String> where = dataplane.store().locate(List.of(key)).get(0).segments();
            return where.isEmpty() ? Optional.empty() : Optional.of(where.get(0));
        }
        List<ObjectLocation> where = dataplane.store().locations(key);
        return where.isEmpty() ? Optional.empty() : Optional.of(where.get(0).segment());
    }

    /** Removes an object; false if it did not exist. Never throws for a missing key. */
    public boolean remove(String key) {
        try {
            boolean removed = dataplane.store().remove(key);
            if (removed) {
                allocations.forget(key);
            }
            return removed;
        } catch (RuntimeException e) {
            log.warn("could not remove '{}': {}", key, e.toString());
            return false;
        }
    }

    /** Whether an object is stored under {@code key}. */
    public boolean exists(String key) {
        return dataplane.store().exists(key);
    }

    /**
     * A view of the bytes of {@code key} if this segment holds a replica of it (no copy), valid
     * while the object is not removed.
     */
    public Optional<ByteBuffer> ownedBytes(String key) {
        return Optional.ofNullable(ownedBytes(List.of(key)).get(key));
    }

    /**
     * As {@link #ownedBytes(String)} for many keys at once, the directory read pipelined: the views
     * of those this segment holds, by key, in the order given.
     */
    public Map<String, ByteBuffer> ownedBytes(List<String> keys) {
        Map<String, ByteBuffer> out = new LinkedHashMap<>();
        if (segment == null) {
            return out;
        }
        dataplane
                .store()
                .locations(keys)
                .forEach(
                        (key, where) -> {
                            for (ObjectLocation l : where) {
                                if (l.segment().equals(segment.name())
                                        && l.size() <= Integer.MAX_VALUE) {
                                    out.put(key, segment.byteBuffer(l.offset(), (int) l.size()));
                                    return;
                                }
                            }
                        });
        return out;
    }

    /**
     * On Mooncake, the objects among {@code keys} whose replicas are all in the segment this
     * owner's agent mounted, with their sizes, in the order given (one {@code locate} for all, then
     * the size of each held one): what this owner saves in a checkpoint. Empty on the built-in
     * engine ({@link #ownedBytes(List)} gives views there).
     */
    public Map<String, Long> heldInAgent(List<String> keys) {
        Map<String, Long> out = new LinkedHashMap<>();
        Optional<String> own = mooncake ? storeEndpoint() : Optional.empty();
        if (own.isEmpty() || keys.isEmpty()) {
            return out;
        }
        for (StoreClient.Located l : dataplane.store().locate(keys)) {
            if (!l.segments().isEmpty() && l.segments().stream().allMatch(own.get()::equals)) {
                out.put(l.key(), dataplane.store().size(l.key()));
            }
        }
        return out;
    }

    /**
     * Reads each of {@code keys} whole into its range of {@code into} (receive memory of this data
     * plane, the staging), after one {@code locate} of all: on Mooncake a local read from the
     * agent's own segment, no network byte.
     *
     * @return per key, the bytes read or a negative code ({@link
     *     io.weightrelay.dataplane.DataplaneError}, Mooncake's own; an object gone since answers
     *     {@code OBJECT_NOT_FOUND})
     */
    public long[] readHeld(List<String> keys, List<ReadRange> into) {
        long[] out = new long[keys.size()];
        List<StoreClient.Located> located = dataplane.store().locate(keys);
        for (int i = 0; i < out.length; i++) {
            try {
                out[i] = dataplane.store().getIntoRanges(located.get(i), List.of(into.get(i)))[0];
            } catch (ObjectNotFoundException e) {
                out[i] = OBJECT_GONE;
            }
        }
        return out;
    }

    /** What {@link #readHeld} answers for an object no longer stored. */
    public static final long OBJECT_GONE = -704;

    /** What this publisher stored in its own segment, per generation. */
    SegmentAllocations allocations() {
        return allocations;
    }

    /**
     * Frees allocations of this segment whose objects Redis forgot: each whose key the directory
     * does not list at that offset of this segment (one listed there is stored, and removing it
     * frees it). Called by {@link SegmentAllocations#settle} under its monitor, so this owner
     * starts no allocation meanwhile.
     *
     * @return the bytes the segment got back
     */
    long freeForgotten(List<SegmentAllocations.Allocation> forgotten) {
        if (segment == null || forgotten.isEmpty()) {
            return 0;
        }
        List<String> keys = forgotten.stream().map(SegmentAllocations.Allocation::key).toList();
        Map<String, List<ObjectLocation>> listed = dataplane.store().locations(keys);
        long before = segment.freeBytes();
        int freed = 0;
        for (SegmentAllocations.Allocation a : forgotten) {
            boolean stored =
                    listed.getOrDefault(a.key(), List.of()).stream()
                            .anyMatch(
                                    l ->
                                            l.segment().equals(segment.name())
                                                    && l.offset() == a.offset());
            if (stored) {
                continue;
            }
            try {
                dataplane.store().releaseReservation(segment, a.offset());
                freed++;
            } catch (RuntimeException e) {
                // Already free (a collection freed it before Redis lost its data): nothing to do.
                log.debug("offset {} of '{}' was not allocated: {}", a.offset(), a.key(), e);
            }
        }
        long bytes = Math.max(0, segment.freeBytes() - before);
        log.warn(
                "segment '{}': freed {} allocations ({} bytes) of objects whose generations Redis"
                        + " lost",
                segment.name(),
                freed,
                bytes);
        return bytes;
    }

    @Override
    public void close() {
        dataplane.close();
    }
}
