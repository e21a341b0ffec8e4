package io.weightrelay.lab.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A service started as a child JVM from its executable jar on a free loopback port. */
final class ServiceProcess implements AutoCloseable {
    private final String name;
    private final Process process;
    private final Path log;
    private final int port;

    private ServiceProcess(String name, Process process, Path log, int port) {
        this.name = name;
        this.process = process;
        this.log = log;
        this.port = port;
    }

    static ServiceProcess start(String name, Path jar, String heap, List<String> args, Path logs) {
        int port = freePort();
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx" + heap);
        command.add("-XX:+UseSerialGC");
        command.add("-jar");
        command.add(jar.toString());
        command.add("--server.port=" + port);
        command.add("--server.address=127.0.0.1");
        command.addAll(args);
        Path log = logs.resolve(name + ".log");
        try {
            Process p =
                    new ProcessBuilder(command)
                            .redirectErrorStream(true)
                            .redirectOutput(log.toFile())
                            .start();
            return new ServiceProcess(name, p, log, port);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + " from " + jar, e);
        }
    }

    String baseUrl() {
        return "http://127.0.0.1:" + port;
    }

    String name() {
        return name;
    }

    void awaitHealthy(Duration timeout) throws InterruptedException {
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
            }
            Thread.sleep(250);
        }
        throw new IllegalStateException(name + " not healthy within " + timeout + ":\n" + tail());
    }

    String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    static Path findJar(Path root, String module) {
        Path target = root.resolve(module).resolve("target");
        try (DirectoryStream<Path> jars =
                Files.newDirectoryStream(target, module + "-*-exec.jar")) {
            for (Path jar : jars) {
                return jar;
            }
        } catch (IOException e) {
            // fall through
        }
        throw new IllegalStateException(
                "no "
                        + module
                        + "-*-exec.jar under "
                        + target
                        + "; build it with mvn -DskipTests install");
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
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
