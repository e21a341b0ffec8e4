package io.weightrelay.publisher.segment;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.publisher.staging.StagingArea;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's data plane, its segment and the staging area registered as the source of puts. Every
 * put stores one pinned copy preferably in the own segment ({@code replicaNum=1,
 * preferredSegments=[own], hardPin=true}); the store places it elsewhere only when the own segment
 * is full.
 *
 * <p>Ownership: opened at start-up, closed with the application context (closing unpublishes and
 * removes the segment). Thread safe.
 */
public final class SegmentOwner implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SegmentOwner.class);

    private final SegmentProperties properties;
    private final Dataplane dataplane;
    private final Segment segment;
    private final RegisteredBuffer staging;
    private final ReplicateConfig preferLocal;

    public SegmentOwner(SegmentProperties properties, StagingArea stagingArea) {
        this.properties = properties;
        DataplaneConfig config =
                DataplaneConfig.builder(properties.node())
                        .redisUri(properties.redisUri())
                        .keyPrefix(properties.keyPrefix())
                        .tcpBindHost(properties.tcpBindHost())
                        .tcpPort(properties.tcpPort())
                        .shmDir(properties.shmDir())
                        .ioTimeout(properties.ioTimeout())
                        .build();
        long started = System.nanoTime();
        this.dataplane = Dataplane.open(config);
        try {
            this.segment = dataplane.createSegment(properties.name(), properties.size().toBytes());
            this.staging = dataplane.registerBuffer(stagingArea.buffer());
        } catch (RuntimeException e) {
            dataplane.close();
            throw e;
        }
        this.preferLocal = ReplicateConfig.preferLocal(segment.name());
        log.info(
                "segment '{}' ({} bytes) of node '{}' ready in {} ms; tcp port {}",
                segment.name(),
                segment.size(),
                properties.node(),
                (System.nanoTime() - started) / 1_000_000,
                dataplane.tcpPort());
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

    /** {@code host:port} of this node's Transfer Engine. */
    public String endpoint() {
        return dataplane.config().advertiseHost() + ":" + dataplane.tcpPort();
    }

    public Counters counters() {
        return dataplane.counters();
    }

    /**
     * Stores {@code size} bytes of staging at {@code stagingOffset} under {@code key}: one copy
     * from staging into the segment that takes it (the own one unless it is full).
     *
     * @throws io.weightrelay.dataplane.DataplaneException when no segment has room, the key exists,
     *     or a peer died during the write (nothing is stored then)
     */
    public void putFromStaging(String key, long stagingOffset, long size) {
        dataplane.store().putFrom(key, staging, stagingOffset, size, preferLocal);
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
        try {
            staging.close();
        } finally {
            dataplane.close();
        }
    }
}
