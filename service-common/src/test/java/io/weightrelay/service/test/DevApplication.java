package io.weightrelay.service.test;

import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The arguments of a service's {@code TestXxxApplication} main, which runs it locally: the
 * development settings every service shares (the test Redis, Testcontainers where Docker exists,
 * else the machine's own; its data plane under the key prefix {@code wr:dev:} with the tests'
 * secret, so what one service stored the others read), then the service's own, each replaced by the
 * same setting given as an argument.
 */
public final class DevApplication {

    private DevApplication() {}

    /**
     * {@code args} after the shared and the service's {@code own} development settings (in the
     * order given) that {@code args} does not set.
     */
    public static String[] arguments(Map<String, String> own, String[] args) {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("relay.dataplane.redis-uri", RedisTestSupport.endpoint().uri());
        settings.put("relay.dataplane.key-prefix", "wr:dev:");
        settings.put("relay.dataplane.secret", TestDataplane.SECRET);
        settings.putAll(own);
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
        return all.toArray(String[]::new);
    }
}
