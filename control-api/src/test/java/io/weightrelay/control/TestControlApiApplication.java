package io.weightrelay.control;

import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.SpringApplication;

/**
 * Runs control-api locally against the test Redis (Testcontainers where Docker exists, else the
 * machine's own), with development tokens {@code dev-trainer-token-0000}, {@code
 * dev-loader-token-00000} and {@code dev-operator-token-000}. Extra arguments win.
 */
public final class TestControlApiApplication {

    private TestControlApiApplication() {}

    public static void main(String[] args) {
        RedisTestSupport.Endpoint redis = RedisTestSupport.endpoint();
        List<String> all = new ArrayList<>();
        all.add("--spring.data.redis.host=" + redis.host());
        all.add("--spring.data.redis.port=" + redis.port());
        all.add("--relay.security.tokens.trainer[0]=dev-trainer-token-0000");
        all.add("--relay.security.tokens.loader[0]=dev-loader-token-00000");
        all.add("--relay.security.tokens.operator[0]=dev-operator-token-000");
        all.addAll(List.of(args));
        SpringApplication.from(ControlApiApplication::main).run(all.toArray(String[]::new));
    }
}
