package io.weightrelay.lab.hosts;

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

/**
 * One process running inside a {@link Host}: a service (output in a log file) or an agent (stdin
 * and stdout are pipes the lab talks to one line at a time, stderr in the log). {@link #close()}
 * stops it gracefully and waits; {@link #kill()} ends it at once, as a crash would. The process
 * itself is the one started ({@code nsenter} execs it), so {@link #pid()} is its pid.
 */
public final class HostProcess implements AutoCloseable {

    private final String name;
    private final Host host;
    private final Process process;
    private final Path log;
    private final BufferedReader out;
    private final Writer in;

    private HostProcess(String name, Host host, Process process, Path log, boolean piped) {
        this.name = name;
        this.host = host;
        this.process = process;
        this.log = log;
        this.out =
                piped
                        ? new BufferedReader(
                                new InputStreamReader(
                                        process.getInputStream(), StandardCharsets.UTF_8))
                        : null;
        this.in =
                piped
                        ? new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8)
                        : null;
    }

    static HostProcess start(
            Host host, String name, List<String> command, Path logs, boolean piped) {
        Path log = logs.resolve(name + ".log");
        ProcessBuilder pb = new ProcessBuilder(command);
        if (piped) {
            pb.redirectError(log.toFile());
        } else {
            pb.redirectErrorStream(true).redirectOutput(log.toFile());
        }
        try {
            return new HostProcess(name, host, pb.start(), log, piped);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + " in " + host.name(), e);
        }
    }

    public String name() {
        return name;
    }

    public Host host() {
        return host;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /**
     * Sends one line to an agent and returns the line it answers (null if it ended first). Not for
     * concurrent use on one process.
     */
    public synchronized String ask(String line) {
        try {
            in.write(line);
            in.write('\n');
            in.flush();
            return out.readLine();
        } catch (IOException e) {
            throw new HostLabException(
                    name + " stopped answering (" + e.getMessage() + "); its log:\n" + tail(), e);
        }
    }

    /** Reads the next line an agent says unasked (its ready line); null if it ended. */
    public synchronized String read() {
        try {
            return out.readLine();
        } catch (IOException e) {
            throw new HostLabException(name + " stopped answering (" + e.getMessage() + ")", e);
        }
    }

    /** The last lines of the process's log, for error messages. */
    public String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Asks the process to stop (SIGTERM) and returns at once; {@link #close()} waits. */
    void stop() {
        process.destroy();
    }

    /** Ends the process at once, as a crash would. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        if (in != null) {
            try {
                in.close();
            } catch (IOException e) {
                // the agent is gone already
            }
        }
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
