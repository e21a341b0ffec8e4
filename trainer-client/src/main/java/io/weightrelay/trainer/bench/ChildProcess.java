package io.weightrelay.trainer.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A service started as a child JVM from its executable jar, its output in a log file. */
final class ChildProcess implements AutoCloseable {

    private final String name;
    private final Process process;
    private final Path log;
    private final int port;

    private ChildProcess(String name, Process process, Path log, int port) {
        this.name = name;
        this.process = process;
        this.log = log;
        this.port = port;
    }

    static ChildProcess start(
            String name,
            Path jar,
            String heap,
            List<String> jvmArgs,
            int port,
            List<String> args,
            Path logDir) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx" + heap);
        command.add("-XX:+UseSerialGC");
        command.addAll(jvmArgs);
        command.add("-jar");
        command.add(jar.toString());
        command.add("--server.port=" + port);
        command.add("--server.address=127.0.0.1");
        command.addAll(args);
        Path log = logDir.resolve(name + ".log");
        try {
            Process p =
                    new ProcessBuilder(command)
                            .redirectErrorStream(true)
                            .redirectOutput(log.toFile())
                            .start();
            return new ChildProcess(name, p, log, port);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + " from " + jar, e);
        }
    }

    String name() {
        return name;
    }

    String baseUrl() {
        return "http://127.0.0.1:" + port;
    }

    /** Waits until {@code /actuator/health} answers 200. */
    void awaitHealthy(Duration timeout) {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited early; its log:\n" + tail());
            }
            try {
                HttpResponse<String> r =
                        http.send(
                                HttpRequest.newBuilder(URI.create(baseUrl() + "/actuator/health"))
                                        .timeout(Duration.ofSeconds(2))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            sleep(250);
        }
        throw new IllegalStateException(
                name + " not healthy within " + timeout + "; log:\n" + tail());
    }

    /** CPU time the process has used so far (user + system), zero if the OS does not tell. */
    Duration cpu() {
        return process.info().totalCpuDuration().orElse(Duration.ZERO);
    }

    String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
