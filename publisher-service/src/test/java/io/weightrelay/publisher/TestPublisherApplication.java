package io.weightrelay.publisher;

import io.weightrelay.service.test.RedisTestSupport;
import io.weightrelay.service.test.TestDataplane;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.SpringApplication;

/**
 * Runs a publisher locally against the test Redis (Testcontainers where Docker exists, else the
 * machine's own) and a control-api on {@code http://127.0.0.1:8080} (e.g. {@code
 * TestControlApiApplication}), with the development tokens: trainer {@code dev-trainer-token-0000}
 * (accepted, and presented to control-api), operator {@code dev-operator-token-000}; its data plane
 * under the key prefix {@code wr:dev:} with the tests' secret. Extra arguments win.
 */
public final class TestPublisherApplication {

    private TestPublisherApplication() {}

    public static void main(String[] args) {
        RedisTestSupport.Endpoint redis = RedisTestSupport.endpoint();
        List<String> all = new ArrayList<>();
        all.add("--relay.dataplane.redis-uri=" + redis.uri());
        all.add("--relay.dataplane.key-prefix=wr:dev:");
        all.add("--relay.dataplane.secret=" + TestDataplane.SECRET);
        all.add("--relay.security.tokens.trainer[0]=dev-trainer-token-0000");
        all.add("--relay.security.tokens.operator[0]=dev-operator-token-000");
        all.add("--relay.publish.control-api-token=dev-trainer-token-0000");
        all.addAll(List.of(args));
        SpringApplication.from(PublisherApplication::main).run(all.toArray(String[]::new));
    }
}
