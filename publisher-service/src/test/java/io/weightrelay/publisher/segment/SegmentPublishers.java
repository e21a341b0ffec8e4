package io.weightrelay.publisher.segment;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.publisher.ExpectedFragments;
import io.weightrelay.publisher.PublisherApplication;
import io.weightrelay.publisher.TestControlApi;
import io.weightrelay.publisher.TestPublisherProperties;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the segment tests that run a real publisher share: the publisher as a child JVM from this
 * module's classes, owning one segment in segment staging mode against a test control-api; the
 * check of what it stored, read over tcp by a reader engine of another node; and stopping it all.
 */
final class SegmentPublishers {

    private SegmentPublishers() {}

    /**
     * Starts a publisher as {@code name} owning {@code segment} (16 MB) of {@code node}, its data
     * plane under {@code prefix}, reporting to {@code control} with the trainer token (losses with
     * the owner token), accepting the trainer and operator tokens, and with the settings {@code
     * more} on top; waits until it is healthy.
     */
    static ServiceProcess start(
            String name,
            TestControlApi control,
            String prefix,
            String node,
            String segment,
            List<String> more)
            throws InterruptedException {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--relay.dataplane.redis-uri=" + RedisTestSupport.endpoint().uri(),
                                "--relay.dataplane.key-prefix=" + prefix,
                                "--relay.dataplane.secret=" + TestDataplane.SECRET,
                                "--relay.segment.node=" + node,
                                "--relay.segment.name=" + segment,
                                "--relay.segment.size=16MB",
                                "--relay.staging.mode=segment",
                                "--relay.staging.capacity=4MB",
                                "--relay.staging.max-batch-bytes=1MB",
                                "--relay.publish.control-api-url=" + control.baseUrl(),
                                "--relay.publish.control-api-token="
                                        + TestPublisherProperties.TRAINER_TOKEN,
                                // a loss is reported with the owner token: control-api
                                // refuses it from the trainer token
                                "--relay.publish.owner-token="
                                        + TestPublisherProperties.SEGMENT_OWNER_TOKEN,
                                "--relay.security.tokens.trainer[0]="
                                        + TestPublisherProperties.TRAINER_TOKEN,
                                "--relay.security.tokens.operator[0]="
                                        + TestPublisherProperties.OPERATOR_TOKEN));
        args.addAll(more);
        ServiceProcess p =
                ServiceProcess.startMain(
                        name,
                        System.getProperty("java.class.path"),
                        PublisherApplication.class.getName(),
                        "256m",
                        List.of("-XX:TieredStopAtLevel=1"),
                        args,
                        Path.of("target"));
        try {
            p.awaitHealthy(Duration.ofMinutes(2));
        } catch (RuntimeException | InterruptedException e) {
            p.close();
            throw e;
        }
        return p;
    }

    /**
     * Reads every object of {@code generation} over tcp with {@code reader} and checks it against
     * the trainer's bytes (of {@code seed}): one location each, in {@code segment}, byte for byte.
     *
     * @return where each object is
     */
    static Map<String, ObjectLocation> verifyAll(
            Dataplane reader,
            SourceManifest manifest,
            long generation,
            String segment,
            long seed,
            long maxFragment) {
        Map<String, ObjectLocation> where = new HashMap<>();
        ByteBuffer memory = ByteBuffer.allocateDirect((int) maxFragment * 2);
        try (RegisteredBuffer buffer = reader.registerBuffer(memory)) {
            for (StoredFragment f : manifest.fragments()) {
                String key = new GenerationId(manifest.model(), generation).objectKey(f.fragment());
                List<ObjectLocation> locations = reader.store().locations(key);
                assertThat(locations).as(key).hasSize(1);
                assertThat(locations.get(0).segment()).as(key).isEqualTo(segment);
                where.put(key, locations.get(0));
                long[] read =
                        reader.store()
                                .getIntoRanges(
                                        key, List.of(new ReadRange(0, f.bytes(), buffer, 0)));
                assertThat(read).as(key).containsExactly(f.bytes());
                ByteBuffer got = buffer.byteBuffer().duplicate();
                got.limit((int) f.bytes());
                ByteBuffer expected = ExpectedFragments.bf16(manifest, f, seed, generation);
                assertThat(got.slice().equals(expected)).as(key + " byte for byte").isTrue();
                assertThat(Checksums.crc32c(got.slice()))
                        .as(key)
                        .isEqualTo(Checksums.crc32c(expected));
            }
        }
        return where;
    }

    /**
     * Closes what a test {@code started} that it got to start (null: not started), in the order
     * given, then deletes every key under {@code prefix}, even when a close failed.
     */
    static void stop(String prefix, AutoCloseable... started) throws Exception {
        try {
            for (AutoCloseable c : started) {
                if (c != null) {
                    c.close();
                }
            }
        } finally {
            RedisTestSupport.deleteKeys(prefix);
        }
    }
}
