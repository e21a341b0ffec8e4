package io.weightrelay.testkit.redis;

import com.redis.testcontainers.RedisContainer;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.utility.DockerImageName;

/**
 * The Redis that tests use: a Testcontainers Redis where a Docker engine exists, otherwise the
 * machine's own Redis at {@code 127.0.0.1:6379}, checked with a short socket timeout so that a
 * missing Redis fails in a second with a clear message. Tests never share keys: each takes its own
 * prefix from {@link #uniqueKeyPrefix(String)} and deletes it with {@link #deleteKeys(String)} once
 * nothing writes under it any more.
 */
public final class RedisTestSupport {

    private static final Logger log = LoggerFactory.getLogger(RedisTestSupport.class);
    private static final String LOCAL_HOST = "127.0.0.1";
    private static final int LOCAL_PORT = 6379;
    private static final String TEST_NAMESPACE = "wr:test:";
    private static final String TESTCONTAINERS = "testcontainers";

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
        return TEST_NAMESPACE + testName + ":" + UUID.randomUUID().toString().substring(0, 8) + ":";
    }

    /**
     * Deletes every key under {@code prefix}, a page of SCAN MATCH {@code prefix*} and one UNLINK
     * at a time, so that a test leaves the shared Redis as it found it. Call it after whatever
     * writes under the prefix (a Spring context, a child process, a data plane) has stopped. Only a
     * prefix from {@link #uniqueKeyPrefix(String)} is accepted: other runs and developers use this
     * Redis too.
     */
    public static void deleteKeys(String prefix) {
        if (!prefix.startsWith(TEST_NAMESPACE) || prefix.length() <= TEST_NAMESPACE.length()) {
            throw new IllegalArgumentException("not a test's own key prefix: " + prefix);
        }
        String pattern = prefix.replaceAll("([*?\\[\\]\\\\])", "\\\\$1") + "*";
        try (Connection redis = new Connection(endpoint())) {
            byte[] cursor = Connection.bytes("0");
            do {
                List<?> page =
                        (List<?>) redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", 1000);
                cursor = (byte[]) page.get(0);
                List<?> keys = (List<?>) page.get(1);
                if (!keys.isEmpty()) {
                    List<Object> unlink = new ArrayList<>(keys.size() + 1);
                    unlink.add("UNLINK");
                    unlink.addAll(keys);
                    redis.call(unlink.toArray());
                }
            } while (!Arrays.equals(cursor, Connection.bytes("0")));
        } catch (IOException ex) {
            throw new UncheckedIOException(
                    "deleting the test keys under " + prefix + " failed", ex);
        }
    }

    /**
     * Deletes the keys under {@code prefix} when the JVM exits, after every Spring application
     * context has closed ({@link SpringApplication#getShutdownHandlers()} run only then), for a
     * prefix that a context in Spring's test context cache writes under: such a context outlives
     * the test class and is closed only at exit. A Testcontainers Redis stops at exit anyway.
     */
    public static void deleteKeysAtShutdown(String prefix) {
        if (!endpoint().source().equals(TESTCONTAINERS)) {
            SpringApplication.getShutdownHandlers().add(() -> deleteKeys(prefix));
        }
    }

    /**
     * One plain RESP connection: this module has no Redis client, and deleting keys needs only two
     * commands. Arguments are strings, numbers or raw {@code byte[]}; replies are {@code String},
     * {@code Long}, {@code byte[]} (bulk) or {@code List}.
     */
    static final class Connection implements AutoCloseable {
        private final Socket socket;
        private final OutputStream out;
        private final DataInputStream in;

        Connection(Endpoint endpoint) throws IOException {
            socket = new Socket();
            try {
                socket.connect(new InetSocketAddress(endpoint.host(), endpoint.port()), 1000);
                socket.setSoTimeout(30_000);
                out = new BufferedOutputStream(socket.getOutputStream());
                in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            } catch (IOException ex) {
                socket.close();
                throw ex;
            }
        }

        Object call(Object... args) throws IOException {
            out.write(bytes("*" + args.length + "\r\n"));
            for (Object arg : args) {
                byte[] value = arg instanceof byte[] raw ? raw : bytes(String.valueOf(arg));
                out.write(bytes("$" + value.length + "\r\n"));
                out.write(value);
                out.write(bytes("\r\n"));
            }
            out.flush();
            return reply();
        }

        private Object reply() throws IOException {
            int type = in.readUnsignedByte();
            String line = line();
            return switch (type) {
                case '+' -> line;
                case ':' -> Long.parseLong(line);
                case '$' -> {
                    int length = Integer.parseInt(line);
                    if (length < 0) {
                        yield null;
                    }
                    byte[] bulk = new byte[length];
                    in.readFully(bulk);
                    line();
                    yield bulk;
                }
                case '*' -> {
                    int count = Integer.parseInt(line);
                    List<Object> items = new ArrayList<>(Math.max(count, 0));
                    for (int i = 0; i < count; i++) {
                        items.add(reply());
                    }
                    yield items;
                }
                case '-' -> throw new IOException("Redis answered: " + line);
                default -> throw new IOException("unexpected Redis reply type " + (char) type);
            };
        }

        private String line() throws IOException {
            StringBuilder line = new StringBuilder();
            for (int b = in.readUnsignedByte(); b != '\r'; b = in.readUnsignedByte()) {
                line.append((char) b);
            }
            in.readUnsignedByte(); // the '\n' after it
            return line.toString();
        }

        static byte[] bytes(String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private static Endpoint resolve() {
        if (dockerAvailable()) {
            RedisContainer container = new RedisContainer(DockerImageName.parse("redis:7-alpine"));
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
            return new Endpoint(container.getRedisHost(), container.getRedisPort(), TESTCONTAINERS);
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
