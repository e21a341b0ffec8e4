package io.weightrelay.dataplane;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A {@link PeerMain} child JVM (small heap, same class path) and its command channel. */
final class PeerProcess implements AutoCloseable {
    private final Process process;
    private final BufferedReader out;
    private final Writer in;
    private final Path shmPath;
    private final int port;

    private PeerProcess(Process process) throws IOException {
        this.process = process;
        this.out =
                new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        String ready = out.readLine();
        if (ready == null || !ready.startsWith("READY ")) {
            process.destroyForcibly();
            throw new IllegalStateException("peer did not start: " + ready);
        }
        this.shmPath = Path.of(ready.split(" ")[2]);
        this.port = Integer.parseInt(ready.split(" ")[1]);
    }

    static PeerProcess start(
            String redisUri, String keyPrefix, String nodeLabel, String segment, long size)
            throws IOException {
        return start(redisUri, keyPrefix, nodeLabel, segment, size, 30000, 256);
    }

    /** A child whose server uses the given io timeout and connection cap. */
    static PeerProcess start(
            String redisUri,
            String keyPrefix,
            String nodeLabel,
            String segment,
            long size,
            long ioTimeoutMs,
            int maxConnections)
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
                                PeerMain.class.getName(),
                                redisUri,
                                keyPrefix,
                                nodeLabel,
                                segment,
                                Long.toString(size),
                                Long.toString(ioTimeoutMs),
                                Integer.toString(maxConnections)));
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        return new PeerProcess(pb.start());
    }

    /** The port of the child engine's tcp server. */
    int port() {
        return port;
    }

    /** Sends one command and returns the text after "OK"; throws on "ERR". */
    synchronized String command(String line) {
        try {
            in.write(line + "\n");
            in.flush();
            String reply = out.readLine();
            if (reply == null || !reply.startsWith("OK")) {
                throw new IllegalStateException("peer answered '" + reply + "' to '" + line + "'");
            }
            return reply.length() > 3 ? reply.substring(3) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Kills the child at once (SIGKILL), as a crash would. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws Exception {
        if (process.isAlive()) {
            try {
                command("exit");
            } catch (RuntimeException ignored) {
                // already going away
            }
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
        Files.deleteIfExists(shmPath); // a killed child leaves its file behind
    }
}
