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
 * Not thread safe.
 */
public final class LabRedis implements AutoCloseable {

    private final int port;
    private final Path dir;
    private final boolean persistent;
    private Process process;

    private LabRedis(Path dir, boolean persistent) {
        this.port = io.weightrelay.service.test.ServiceProcess.freePort();
        this.dir = dir;
        this.persistent = persistent;
    }

    /** Starts one in {@code dir} (made if missing), persistent or not. */
    public static LabRedis start(Path dir, boolean persistent) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make " + dir, e);
        }
        LabRedis redis = new LabRedis(dir, persistent);
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
                                "redis-server",
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
            throw new UncheckedIOException("cannot start redis-server (is it installed?)", e);
        }
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
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            s.setSoTimeout(500);
            s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] answer = new byte[7];
            int n = s.getInputStream().read(answer);
            return n > 0 && new String(answer, 0, n, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException notYet) {
            return false;
        }
    }

    /** SIGKILL: no shutdown save, no last fsync; what is on disk is all a restart finds. */
    public void kill() {
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
