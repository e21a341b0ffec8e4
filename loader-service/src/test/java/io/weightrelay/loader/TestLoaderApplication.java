package io.weightrelay.loader;

import io.weightrelay.service.test.DevApplication;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.SpringApplication;

/**
 * Runs a loader locally on port 8082 against the test Redis (Testcontainers where Docker exists,
 * else the machine's own) and a control-api on {@code http://127.0.0.1:8080} (e.g. {@code
 * TestControlApiApplication}), with the development tokens: loader {@code dev-loader-token-00000}
 * (the engine's token here, and presented to control-api, which accepts it as a loader's), operator
 * {@code dev-operator-token-000}; its data plane under the key prefix {@code wr:dev:} with the
 * tests' secret, so it reads what a {@code TestPublisherApplication} stored. A setting given as an
 * argument replaces the development one.
 */
public final class TestLoaderApplication {

    private TestLoaderApplication() {}

    public static void main(String[] args) {
        Map<String, String> own = new LinkedHashMap<>();
        own.put("relay.security.tokens.loader[0]", "dev-loader-token-00000");
        own.put("relay.security.tokens.operator[0]", "dev-operator-token-000");
        own.put("relay.loader.control-url", "http://127.0.0.1:8080");
        own.put("relay.loader.token", "dev-loader-token-00000");
        SpringApplication.from(LoaderApplication::main).run(DevApplication.arguments(own, args));
    }
}
