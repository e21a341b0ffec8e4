package io.weightrelay.publisher;

import io.weightrelay.service.test.DevApplication;
import java.util.LinkedHashMap;
import java.util.Map;
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
        Map<String, String> own = new LinkedHashMap<>();
        own.put("relay.security.tokens.trainer[0]", "dev-trainer-token-0000");
        own.put("relay.security.tokens.operator[0]", "dev-operator-token-000");
        own.put("relay.publish.control-api-token", "dev-trainer-token-0000");
        SpringApplication.from(PublisherApplication::main).run(DevApplication.arguments(own, args));
    }
}
