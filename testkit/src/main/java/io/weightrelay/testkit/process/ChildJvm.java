package io.weightrelay.testkit.process;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A test's main class in a child JVM (small heap, C1 only, the test's class path) and the line
 * channel to it: the child prints {@code READY ...} once it is up, then answers each command line
 * it reads on stdin with a line starting {@code OK} or {@code ERR}; other lines it prints on stdout
 * (logging) are skipped. Its stderr goes to a log file in {@code java.io.tmpdir}, whose tail the
 * failures quote and which {@link #close()} removes. The data plane's peer tests and the loader's
 * multi-process tests use it.
 */
public final class ChildJvm extends ChildProcess {
    private final BufferedReader out;
    private final Writer in;
    private final String ready;

    private ChildJvm(String name, Process process, Path log) throws IOException {
        super(name, process, log);
        this.out =
                new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        String line = out.readLine();
        while (line != null && !line.startsWith("READY ") && !line.startsWith("Exception")) {
            line = out.readLine();
        }
        if (line == null || !line.startsWith("READY ")) {
            process.destroyForcibly();
            throw new IllegalStateException(
                    name + " did not start: " + line + "; its stderr:\n" + tail());
        }
        this.ready = line.substring("READY ".length());
    }

    /**
     * Starts {@code main} with {@code args} and waits until it is ready.
     *
     * @param name what failures call the child ({@code loader i0001})
     */
    public static ChildJvm start(String name, Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(
                List.of(
                        "-Xmx128m",
                        "-XX:+UseSerialGC",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        System.getProperty("java.class.path"),
                        main.getName()));
        command.addAll(List.of(args));
        Path log = Files.createTempFile(name.replaceAll("[^A-Za-z0-9._-]", "-") + "-", ".log");
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.redirectError(log.toFile());
        try {
            return new ChildJvm(name, pb.start(), log);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(log);
            throw e;
        }
    }

    /** What the child's ready line says after {@code READY}. */
    public String ready() {
        return ready;
    }

    /** Sends a command without waiting for the reply. */
    public synchronized void send(String line) {
        try {
            in.write(line + "\n");
            in.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The next reply line, {@code OK...} or {@code ERR...}. */
    public synchronized String reply() {
        try {
            while (true) {
                String line = out.readLine();
                if (line == null) {
                    throw new IllegalStateException(name() + " exited; its stderr:\n" + tail());
                }
                if (line.startsWith("OK") || line.startsWith("ERR")) {
                    return line;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Sends a command and expects OK; returns the text after it. */
    public synchronized String ok(String line) {
        send(line);
        String reply = reply();
        if (!reply.startsWith("OK")) {
            throw new IllegalStateException(name() + " answered '" + reply + "' to '" + line + "'");
        }
        return reply.substring(2).trim();
    }

    /**
     * Asks the child to exit; kills it when it has not within 20 s. Removes its stderr log once it
     * is gone (after {@link #kill()} too).
     */
    @Override
    public void close() {
        Process process = process();
        try {
            if (process.isAlive()) {
                try {
                    send("exit");
                } catch (UncheckedIOException ignored) {
                    // already gone
                }
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        if (!process.isAlive()) {
            try {
                Files.deleteIfExists(log());
            } catch (IOException e) {
                System.err.println("could not remove " + log() + ": " + e);
            }
        }
    }
}
