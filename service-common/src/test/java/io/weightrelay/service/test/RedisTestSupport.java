package io.weightrelay.service.test;

import com.redis.testcontainers.RedisContainer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.utility.DockerImageName;

/**
 * The Redis that tests use: a Testcontainers Redis where a Docker engine exists, otherwise the
 * machine's own Redis at {@code 127.0.0.1:6379}, checked with a short socket timeout so that a
 * missing Redis fails in a second with a clear message. Tests never share keys: each takes its own
 * prefix from {@link #uniqueKeyPrefix(String)}.
 */
public final class RedisTestSupport {

    private static final Logger log = LoggerFactory.getLogger(RedisTestSupport.class);
    private static final String LOCAL_HOST = "127.0.0.1";
    private static final int LOCAL_PORT = 6379;

    private static volatile Endpoint endpoint;

    /** Where a test's Redis is. */
    public record Endpoint(String host, int port, String source) {
        public String uri() {
            return "redis://" + host + ":" + port;
        }
    }

    private RedisTestSupport() {}

    /** The endpoint, started or checked once per JVM. */
    public static Endpoint endpoint() {
        Endpoint e = endpoint;
        if (e == null) {
            synchronized (RedisTestSupport.class) {
                e = endpoint;
                if (e == null) {
                    e = endpoint = resolve();
                    log.info("tests use Redis at {}:{} ({})", e.host(), e.port(), e.source());
                }
            }
        }
        return e;
    }

    /** Points Spring Data Redis at the test Redis. */
    public static void register(DynamicPropertyRegistry registry) {
        Endpoint e = endpoint();
        registry.add("spring.data.redis.host", e::host);
        registry.add("spring.data.redis.port", e::port);
    }

    /** A key prefix no other test uses, under the project's {@code wr:} namespace. */
    public static String uniqueKeyPrefix(String testName) {
        return "wr:test:" + testName + ":" + UUID.randomUUID().toString().substring(0, 8) + ":";
    }

    private static Endpoint resolve() {
        if (dockerAvailable()) {
            RedisContainer container = new RedisContainer(DockerImageName.parse("redis:7-alpine"));
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
            return new Endpoint(
                    container.getRedisHost(), container.getRedisPort(), "testcontainers");
        }
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(LOCAL_HOST, LOCAL_PORT), 1000);
        } catch (IOException ex) {
            throw new IllegalStateException(
                    "no Docker engine and no Redis at "
                            + LOCAL_HOST
                            + ":"
                            + LOCAL_PORT
                            + "; start one with: redis-server --daemonize yes --bind 127.0.0.1"
                            + " --port 6379 --save '' --appendonly no",
                    ex);
        }
        return new Endpoint(LOCAL_HOST, LOCAL_PORT, "local, no Docker engine");
    }

    private static boolean dockerAvailable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError ex) {
            return false;
        }
    }
}
