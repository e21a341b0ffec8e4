package io.weightrelay.publisher.segment;

import static io.weightrelay.service.test.StartRefusal.assertRefusesToStart;
import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.MetadataException;
import io.weightrelay.publisher.PublisherApplication;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.process.ServiceProcess;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A publisher whose data plane's Redis does not answer cannot create its segment, so it refuses to
 * start, and Spring Boot's start-up report names that Redis, the property that chose it and what to
 * do, instead of a chain of bean-creation exceptions (issue 52: a service that cannot reach a
 * dependency says so by name, in seconds).
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisUnreachableAtStartTest {

    @Test
    void refusesToStartNamingTheRedisItCannotReachAndWhatToDo(CapturedOutput output) {
        String redis = "redis://127.0.0.1:" + ServiceProcess.freePort(); // nothing listens there
        String id = UUID.randomUUID().toString().substring(0, 8);

        assertRefusesToStart(
                PublisherApplication.class,
                MetadataException.class,
                "cannot connect to Redis at " + redis,
                "--relay.dataplane.redis-uri=" + redis,
                "--relay.dataplane.secret=" + TestDataplane.SECRET,
                "--relay.segment.node=node-a",
                "--relay.segment.name=unreachable-redis-" + id,
                "--relay.segment.size=1MB",
                "--relay.staging.mode=segment",
                "--relay.staging.capacity=512KB",
                "--relay.staging.max-batch-bytes=256KB",
                "--relay.segment.register=false");

        assertThat(output.getAll())
                .contains("APPLICATION FAILED TO START")
                .contains(
                        "cannot reach Redis at "
                                + redis
                                + " (relay.dataplane.redis-uri): Connection refused. The data"
                                + " plane keeps its store directory and segment descriptors there")
                .contains("Start Redis at " + redis + " (Debian: apt-get install redis-server)");
    }
}
