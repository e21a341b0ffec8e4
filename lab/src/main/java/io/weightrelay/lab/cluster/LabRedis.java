package io.weightrelay.lab.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A redis-server of one lab on a free loopback port, in a directory of its own, which a fault case
 * kills with SIGKILL and starts again on the same port: with {@code persistent} its append-only
 * file ({@code appendfsync always}) keeps every acknowledged write across the kill; without it
 * (nothing saved at all) the restarted server is empty, as after losing the machine Redis ran on.
 * The server stops by itself within a second of this JVM's end, however it ended (Ctrl-C, {@code
 * System.exit}, SIGKILL): a watcher beside it, as the services' {@code relay.parent-pid}, so no
 * redis-server outlives its lab. Not thread safe.
 */
public final class LabRedis implements AutoCloseable {

    /**
     * The redis-server to run: this system property, else the environment variable {@value
     * #SERVER_ENV}, else {@code redis-server} found on {@code PATH}.
     */
    public static final String SERVER_PROPERTY = "relay.lab.redis-server";

    /** See {@link #SERVER_PROPERTY}. */
    public static final String SERVER_ENV = "RELAY_LAB_REDIS_SERVER";

    /** What to install when there is no redis-server, as a user reads it. */
    public static final String INSTALL_HINT =
            "install Redis (Debian, Ubuntu: apt-get install redis-server; Fedora: dnf install"
                    + " redis; macOS: brew install redis)";

    /** There is no redis-server to run; the message names where it looked and what to install. */
    public static final class ServerMissing extends IllegalStateException {
        ServerMissing(String message) {
            super(message);
        }
    }

    private final int port;
    private final Path dir;
    private final boolean persistent;
    private final Path server;
    private Process process;
    private Process watcher;

    private LabRedis(Path dir, boolean persistent) {
        this.server = serverBinary();
        this.port = io.weightrelay.testkit.process.ServiceProcess.freePort();
        this.dir = dir;
        this.persistent = persistent;
    }

    /**
     * The redis-server this machine runs ({@link #SERVER_PROPERTY}), checked to exist and be
     * executable; throws {@link ServerMissing} naming what to install when it is not there.
     */
    public static Path serverBinary() {
        String configured = System.getProperty(SERVER_PROPERTY);
        String source = "-D" + SERVER_PROPERTY;
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(SERVER_ENV);
            source = SERVER_ENV;
        }
        if (configured != null && !configured.isBlank()) {
            Path given = Path.of(configured);
            if (Files.isRegularFile(given) && Files.isExecutable(given)) {
                return given;
            }
            throw new ServerMissing(
                    "redis-server not found: "
                            + source
                            + "="
                            + configured
                            + " is not an executable file; "
                            + INSTALL_HINT);
        }
        String path = System.getenv().getOrDefault("PATH", "");
        for (String entry : path.split(java.io.File.pathSeparator)) {
            if (entry.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(entry, "redis-server");
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new ServerMissing(
                "redis-server not found on PATH ("
                        + path
                        + "); "
                        + INSTALL_HINT
                        + ", or set "
                        + SERVER_ENV
                        + " to its path");
    }

    /**
     * Whether a Redis at {@code host:port} answers PING with PONG, asked up to three times (a
     * server still loading its AOF answers LOADING, one that wants a password NOAUTH: neither
     * counts). Nothing listening is known in well under a second; a server that accepts but does
     * not answer takes about ten, so a Redis slow on a loaded machine is not taken for a dead one.
     */
    public static boolean answersPing(String host, int port) {
        for (int attempt = 0; attempt < 3; attempt++) {
            if (attempt > 0) {
                sleep(200);
            }
            if (pingOnce(host, port, 2000)) {
                return true;
            }
        }
        return false;
    }

    /** One PING, waiting at most {@code timeoutMs} to connect and as long for the answer. */
    private static boolean pingOnce(String host, int port, int timeoutMs) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), timeoutMs);
            s.setSoTimeout(timeoutMs);
            s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] answer = new byte[7];
            int n = s.getInputStream().read(answer);
            return n > 0 && new String(answer, 0, n, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException notThere) {
            return false;
        }
    }

    /** Starts one in {@code dir} (made if missing), persistent or not. */
    public static LabRedis start(Path dir, boolean persistent) {
        LabRedis redis = new LabRedis(dir, persistent);
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make " + dir, e);
        }
        redis.startServer();
        return redis;
    }

    public String host() {
        return "127.0.0.1";
    }

    public int port() {
        return port;
    }

    /** A lab spec like {@code spec} whose services use this Redis. */
    public LabCluster.Spec serve(LabCluster.Spec spec) {
        return spec.on(new LabCluster.Site(host(), port, spec.site().root()));
    }

    private void startServer() {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                server.toString(),
                                "--port",
                                String.valueOf(port),
                                "--bind",
                                "127.0.0.1",
                                "--protected-mode",
                                "yes",
                                "--save",
                                "",
                                "--dir",
                                dir.toString()));
        if (persistent) {
            // always, not everysec: a commit is acknowledged only once it is on disk, so not even
            // the loss of the machine's page cache can take back a committed generation.
            command.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
        } else {
            command.addAll(List.of("--appendonly", "no"));
        }
        try {
            process =
                    new ProcessBuilder(command)
                            .redirectErrorStream(true)
                            .redirectOutput(
                                    ProcessBuilder.Redirect.appendTo(
                                            dir.resolve("redis.log").toFile()))
                            .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + server + "; " + INSTALL_HINT, e);
        }
        watchParent();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(
                        "redis-server on port " + port + " exited early: " + logTail());
            }
            if (answersPing()) {
                return;
            }
            sleep(20);
        }
        throw new IllegalStateException(
                "redis-server on port " + port + " did not answer within 20 s: " + logTail());
    }

    /** Whether it answers PING with PONG (a server still loading its AOF answers LOADING). */
    private boolean answersPing() {
        return pingOnce(host(), port, 500);
    }

    /**
     * Starts a shell that ends the server once this JVM is gone (checked twice a second), and ends
     * itself once the server is: a JVM that never reaches {@link #close()} leaves no server behind.
     */
    private void watchParent() {
        try {
            watcher =
                    new ProcessBuilder(
                                    "sh",
                                    "-c",
                                    "while kill -0 \"$1\" 2>/dev/null && kill -0 \"$2\" 2>/dev/null;"
                                            + " do sleep 0.5; done; kill \"$2\" 2>/dev/null",
                                    "redis-watch",
                                    String.valueOf(ProcessHandle.current().pid()),
                                    String.valueOf(process.pid()))
                            .redirectErrorStream(true)
                            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                            .start();
        } catch (IOException e) {
            System.err.println(
                    "lab: cannot watch redis-server "
                            + process.pid()
                            + " (it stops only when the lab closes): "
                            + e);
        }
    }

    /** SIGKILL: no shutdown save, no last fsync; what is on disk is all a restart finds. */
    public void kill() {
        if (watcher != null) {
            watcher.destroy();
            watcher = null;
        }
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }

    /** Starts the server again on the same port and directory; returns once it answers PING. */
    public void restart() {
        kill();
        startServer();
    }

    /**
     * Starts the server again on the same port with nothing of what it held: every file it wrote is
     * deleted first (its append-only file included), as after losing the machine Redis ran on.
     */
    public void restartEmpty() {
        kill();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                if (!p.equals(dir) && !p.getFileName().toString().equals("redis.log")) {
                    Files.deleteIfExists(p);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete what Redis saved in " + dir, e);
        }
        startServer();
    }

    private String logTail() {
        try {
            List<String> lines = Files.readAllLines(dir.resolve("redis.log"));
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    /** Kills the server and deletes its directory. */
    @Override
    public void close() {
        kill();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            System.err.println("could not delete " + dir + ": " + e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
