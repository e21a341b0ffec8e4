package io.weightrelay.publisher;

import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.springframework.boot.SpringApplication;

/**
 * Runs a publisher locally against the test Redis (Testcontainers where Docker exists, else the
 * machine's own) and a control-api on {@code http://127.0.0.1:8080} (e.g. {@code
 * TestControlApiApplication}), with the development tokens: trainer {@code dev-trainer-token-0000}
 * (accepted, and presented to control-api), operator {@code dev-operator-token-000}; its data plane
 * under the key prefix {@code wr:dev:} with the tests' secret. A setting given as an argument
 * replaces the development one.
 */
public final class TestPublisherApplication {

    private TestPublisherApplication() {}

    public static void main(String[] args) {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("relay.dataplane.redis-uri", RedisTestSupport.endpoint().uri());
        settings.put("relay.dataplane.key-prefix", "wr:dev:");
        settings.put("relay.dataplane.secret", TestDataplane.SECRET);
        settings.put("relay.security.tokens.trainer[0]", "dev-trainer-token-0000");
        settings.put("relay.security.tokens.operator[0]", "dev-operator-token-000");
        settings.put("relay.publish.control-api-token", "dev-trainer-token-0000");
        // Spring joins a setting given twice with a comma, so a given one replaces, not repeats.
        List<String> all = new ArrayList<>();
        settings.forEach(
                (key, value) -> {
                    String option = "--" + key + "=";
                    if (Stream.of(args).noneMatch(a -> a.startsWith(option))) {
                        all.add(option + value);
                    }
                });
        all.addAll(List.of(args));
        SpringApplication.from(PublisherApplication::main).run(all.toArray(String[]::new));
    }
}
