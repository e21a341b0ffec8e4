package io.weightrelay.control;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.ByteBuffer;
import java.util.UUID;

/**
 * A real segment owner for tests: a data plane under the test run's store prefix with one segment,
 * which puts objects the way a publisher does. Control-api's own data plane then removes them.
 */
public final class TestStore implements AutoCloseable {

    private final Dataplane dataplane;
    private final Segment segment;
    private final ByteBuffer sourceBytes;
    private final RegisteredBuffer source;

    public TestStore(String storePrefix) {
        this.dataplane =
                Dataplane.open(
                        DataplaneConfig.builder(
                                        "test-owner-"
                                                + UUID.randomUUID().toString().substring(0, 6))
                                .redisUri(RedisTestSupport.endpoint().uri())
                                .keyPrefix(storePrefix)
                                .secret(TestDataplane.secret())
                                .build());
        this.segment =
                dataplane.createSegment(
                        "seg-" + UUID.randomUUID().toString().substring(0, 8), 4L << 20);
        this.sourceBytes = ByteBuffer.allocateDirect(64 * 1024);
        this.source = dataplane.registerBuffer(sourceBytes);
    }

    public String segmentName() {
        return segment.name();
    }

    public void put(String key, long size) {
        dataplane
                .store()
                .putFrom(key, source, 0, size, ReplicateConfig.preferLocal(segment.name()));
    }

    /** Puts {@code bytes} (at most 64 KiB) under {@code key}, as a publisher stores an object. */
    public void put(String key, byte[] bytes) {
        sourceBytes.clear();
        sourceBytes.put(bytes);
        dataplane
                .store()
                .putFrom(key, source, 0, bytes.length, ReplicateConfig.preferLocal(segment.name()));
    }

    public boolean exists(String key) {
        return dataplane.store().exists(key);
    }

    @Override
    public void close() {
        source.close();
        segment.close();
        dataplane.close();
    }
}
