package io.weightrelay.publisher.segment;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.InPlaceObject;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.service.dataplane.DataplaneSettings;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's data plane and its store segment. Objects are stored one pinned copy each: published
 * in place from a reserved block of the own segment (no copy), or put from registered memory with
 * {@code replicaNum=1, preferredSegments=[own], hardPin=true}, which the store places elsewhere
 * only when the own segment is full.
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
    private final ReplicateConfig preferLocal;
    private final List<String> lostOnRestart;

    /**
     * Opens the data plane {@code relay.dataplane.*} describes, on node {@code relay.segment.node},
     * and creates the segment in it.
     */
    public SegmentOwner(SegmentProperties properties, DataplaneSettings settings) {
        this.properties = properties;
        this.settings = settings;
        long started = System.nanoTime();
        this.dataplane = Dataplane.open(settings.config(properties.node()));
        String redisUri = settings.properties().redisUri();
        String prefix = settings.properties().keyPrefix();
        try {
            // Listed before the segment exists, so every entry naming it describes a previous
            // incarnation's bytes; purged before this one serves a single allocation.
            Map<String, String> stale = StaleObjects.find(redisUri, prefix, properties.name());
            this.segment = dataplane.createSegment(properties.name(), properties.size().toBytes());
            this.lostOnRestart = StaleObjects.purge(redisUri, prefix, stale);
        } catch (RuntimeException e) {
            dataplane.close();
            throw e;
        }
        if (!lostOnRestart.isEmpty()) {
            log.warn(
                    "segment '{}' was re-created: {} objects a previous owner stored in it are gone"
                            + " with it and were purged from the store (generations {}); those"
                            + " generations are unreadable: loaders stay on the one they serve,"
                            + " restore them from a checkpoint or publish a new one",
                    properties.name(),
                    lostOnRestart.size(),
                    StaleObjects.generations(lostOnRestart));
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

    public String segmentName() {
        return segment.name();
    }

    public String node() {
        return properties.node();
    }

    public long size() {
        return segment.size();
    }

    public long freeBytes() {
        return segment.freeBytes();
    }

    /** {@code host:port} peers reach this node's Transfer Engine at (its advertise host). */
    public String endpoint() {
        return settings.endpoint(dataplane.tcpPort());
    }

    public Counters counters() {
        return dataplane.counters();
    }

    /** The segment's shared-memory file (ranks of the node map it in segment staging). */
    public Path shmPath() {
        return segment.shmPath();
    }

    /** A view of [offset, offset + length) of the segment, without a copy. */
    public ByteBuffer bytes(long offset, int length) {
        return segment.byteBuffer(offset, length);
    }

    /**
     * Reserves a block of the segment for bytes written in place.
     *
     * @throws io.weightrelay.dataplane.SegmentFullException when no contiguous room is left
     */
    public long reserve(long size) {
        return dataplane.store().reserve(segment, size);
    }

    /** Frees a reserved block that was not published. */
    public void releaseReservation(long block) {
        dataplane.store().releaseReservation(segment, block);
    }

    /**
     * Publishes objects written in place into the reserved {@code block}, pinned, all or none; the
     * block is used up either way (see {@link
     * io.weightrelay.dataplane.StoreClient#publishInPlace}).
     */
    public void publishInPlace(long block, List<InPlaceObject> objects) {
        dataplane.store().publishInPlace(segment, block, objects, true);
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
    public void putFrom(String key, RegisteredBuffer source, long offset, long size) {
        dataplane.store().putFrom(key, source, offset, size, preferLocal);
    }

    /** The segment holding the object's (first) replica, or empty if it is not stored. */
    public Optional<String> segmentOf(String key) {
        List<ObjectLocation> where = dataplane.store().locations(key);
        return where.isEmpty() ? Optional.empty() : Optional.of(where.get(0).segment());
    }

    /** Removes an object; false if it did not exist. Never throws for a missing key. */
    public boolean remove(String key) {
        try {
            return dataplane.store().remove(key);
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
        if (!dataplane.store().exists(key)) {
            return Optional.empty();
        }
        for (ObjectLocation l : dataplane.store().locations(key)) {
            if (l.segment().equals(segment.name()) && l.size() <= Integer.MAX_VALUE) {
                return Optional.of(segment.byteBuffer(l.offset(), (int) l.size()));
            }
        }
        return Optional.empty();
    }

    @Override
    public void close() {
        dataplane.close();
    }
}
