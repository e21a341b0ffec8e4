package io.weightrelay.control.redis;

import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.util.FileSystemUtils;

/**
 * A redis-server of one test class on a free loopback port, which the test may kill and start
 * again. Its data directory keeps an append-only file with fsync on every write, so what was
 * acknowledged before a kill is there after the restart. As a bean of a test's context ({@link
 * PrivateRedisConfiguration}) it is stopped (and its directory removed) when the context closes;
 * one that several test classes share is closed at exit ({@link #closeAtExit()}).
 */
final class PrivateRedis implements AutoCloseable {

    private final int port = freePort();
    private final Path dir;
    private Process process;
    private final List<String> extraArgs;

    PrivateRedis() {
        this(List.of());
    }

    /** With more redis-server arguments, e.g. {@code --requirepass} and {@code --user}. */
    PrivateRedis(List<String> extraArgs) {
        this(port -> extraArgs);
    }

    /** With more arguments that depend on the port, e.g. {@code --port 0 --tls-port <port>}. */
    PrivateRedis(java.util.function.IntFunction<List<String>> extraArgs) {
        this.extraArgs = List.copyOf(extraArgs.apply(port));
        try {
            dir = Files.createTempDirectory("control-api-redis-");
        } catch (IOException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /** A started one without extra arguments. */
    static PrivateRedis started() {
        PrivateRedis redis = new PrivateRedis();
        redis.start();
        return redis;
    }

    /**
     * Makes this the Redis of the test's control-api: its own state and its data plane's directory.
     */
    void serveAsRedisOf(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.host", () -> "127.0.0.1");
        registry.add("spring.data.redis.port", this::port);
        registry.add("relay.dataplane.redis-uri", this::uri);
    }

    int port() {
        return port;
    }

    String uri() {
        return "redis://127.0.0.1:" + port;
    }

    synchronized void start() {
        try {
            List<String> command =
                    new java.util.ArrayList<>(
                            List.of(
                                    "/usr/bin/redis-server",
                                    "--port",
                                    String.valueOf(port),
                                    "--bind",
                                    "127.0.0.1",
                                    "--save",
                                    "",
                                    "--appendonly",
                                    "yes",
                                    "--appendfsync",
                                    "always",
                                    "--dir",
                                    dir.toString()));
            command.addAll(extraArgs);
            process =
                    new ProcessBuilder(command)
                            .redirectErrorStream(true)
                            .redirectOutput(dir.resolve("redis.log").toFile())
                            .start();
        } catch (IOException ex) {
            throw new IllegalStateException("cannot start /usr/bin/redis-server", ex);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                sleep(50);
            }
        }
        throw new IllegalStateException("private redis-server did not start on port " + port);
    }

    /** Kills the server without a chance to save: only the append-only file survives. */
    synchronized void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            process = null;
        }
    }

    /** Closes this server when the JVM exits (one shared by several test classes). */
    PrivateRedis closeAtExit() {
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    try {
                                        close();
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    }
                                }));
        return this;
    }

    @Override
    public void close() throws InterruptedException {
        kill();
        FileSystemUtils.deleteRecursively(dir.toFile());
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    private static int freePort() {
        return ServiceProcess.freePort();
    }
}
