package io.weightrelay.loader.instance;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.process.ServiceProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The loader opens its data plane at an engine's first registration; when the data plane's Redis
 * does not answer then, the engine gets a 503 {@code unavailable} problem naming that Redis and the
 * property that chose it, at once (issue 52: a service that cannot reach a dependency says so by
 * name), not a 500 "unexpected MetadataException".
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class RedisUnreachableRegistrationTest {

    private static final String ENGINE = "unreachable-engine-token-0123456789";

    /** Nothing listens there. */
    private static final String REDIS = "redis://127.0.0.1:" + ServiceProcess.freePort();

    @DynamicPropertySource
    static void settings(DynamicPropertyRegistry registry) {
        registry.add("relay.dataplane.redis-uri", () -> REDIS);
        registry.add("relay.dataplane.secret", () -> TestDataplane.SECRET);
        registry.add("relay.dataplane.key-prefix", () -> "wr:unreachable-test:");
        registry.add("relay.security.tokens.loader[0]", () -> ENGINE);
        registry.add("relay.loader.token", () -> ENGINE);
        registry.add(
                "relay.loader.control-url", () -> "http://127.0.0.1:" + ServiceProcess.freePort());
    }

    @LocalServerPort int port;

    @Test
    void aRegistrationWhileTheDataplanesRedisIsAwayIsA503NamingIt() throws Exception {
        String registration =
                """
                {"instanceId":"inst-0","model":"qwen","group":"g0","node":"node-a",
                 "workers":[
                  {"workerId":"w0","rank":0,"node":"node-a","nic":"eth0","mode":"compat",
                   "buffers":[{"bufferId":"safetensors","segment":"seg-w0","size":4096}]}]}
                """;
        HttpRequest put =
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/v1/instance"))
                        .header("Authorization", "Bearer " + ENGINE)
                        .header("Content-Type", "application/json")
                        .timeout(Duration.ofSeconds(30))
                        .PUT(HttpRequest.BodyPublishers.ofString(registration))
                        .build();
        long started = System.nanoTime();
        HttpResponse<String> answer =
                HttpClient.newHttpClient().send(put, HttpResponse.BodyHandlers.ofString());

        assertThat((System.nanoTime() - started) / 1e9).isLessThan(10);
        assertThat(answer.statusCode()).as(answer.body()).isEqualTo(503);
        assertThat(answer.headers().firstValue("Content-Type"))
                .hasValue("application/problem+json");
        assertThat(answer.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(answer.body())
                .contains("\"type\":\"https://weightrelay.io/problems/unavailable\"")
                .contains(
                        "cannot reach Redis at "
                                + REDIS
                                + " (relay.dataplane.redis-uri): Connection"
                                + " refused");
    }
}
