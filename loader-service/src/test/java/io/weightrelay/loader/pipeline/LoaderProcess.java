package io.weightrelay.loader.pipeline;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A {@link LoaderProcessMain} child JVM (small heap, the test's class path) and its channel. */
final class LoaderProcess implements AutoCloseable {
    final String instance;
    private final Process process;
    private final BufferedReader out;
    private final Writer in;

    private LoaderProcess(String instance, Process process) throws IOException {
        this.instance = instance;
        this.process = process;
        this.out =
                new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        String ready = out.readLine();
        while (ready != null && !ready.startsWith("READY ") && !ready.startsWith("Exception")) {
            ready = out.readLine();
        }
        if (ready == null || !ready.startsWith("READY ")) {
            process.destroyForcibly();
            throw new IllegalStateException("loader " + instance + " did not start: " + ready);
        }
    }

    static LoaderProcess start(
            String redisUri,
            String prefix,
            Path dir,
            String instance,
            String node,
            long generation,
            int slots,
            int timeoutSeconds,
            int failAtBatch)
            throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb =
                new ProcessBuilder(
                        List.of(
                                java,
                                "-Xmx128m",
                                "-XX:+UseSerialGC",
                                "-XX:TieredStopAtLevel=1",
                                "-cp",
                                System.getProperty("java.class.path"),
                                LoaderProcessMain.class.getName(),
                                redisUri,
                                prefix,
                                dir.toString(),
                                instance,
                                node,
                                Long.toString(generation),
                                Integer.toString(slots),
                                Integer.toString(timeoutSeconds),
                                Integer.toString(failAtBatch)));
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        return new LoaderProcess(instance, pb.start());
    }

    /** Sends a command without waiting for the reply. */
    void send(String line) {
        try {
            in.write(line + "\n");
            in.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The next reply line (log lines the child prints on stdout are skipped). */
    String reply() {
        try {
            while (true) {
                String line = out.readLine();
                if (line == null) {
                    throw new IllegalStateException("loader " + instance + " exited");
                }
                if (line.startsWith("OK") || line.startsWith("ERR")) {
                    return line;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Sends and expects OK; returns the text after it. */
    String ok(String line) {
        send(line);
        String reply = reply();
        if (!reply.startsWith("OK")) {
            throw new IllegalStateException(instance + " answered '" + reply + "' to " + line);
        }
        return reply.substring(2).trim();
    }

    @Override
    public void close() throws Exception {
        if (process.isAlive()) {
            try {
                send("exit");
            } catch (UncheckedIOException ignored) {
                // already gone
            }
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
