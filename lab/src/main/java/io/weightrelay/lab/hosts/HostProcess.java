package io.weightrelay.lab.hosts;

import io.weightrelay.testkit.process.ChildProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * One process running inside a {@link Host}: a service (output in a log file) or an agent (stdin
 * and stdout are pipes the lab talks to one line at a time, stderr in the log). {@link #close()}
 * stops it gracefully and waits; {@link #kill()} ends it at once, as a crash would. The process
 * itself is the one started ({@code nsenter} execs it), so {@link #pid()} is its pid.
 */
public final class HostProcess extends ChildProcess {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final Host host;
    private final BufferedReader out;
    private final Writer in;

    private HostProcess(String name, Host host, Process process, Path log, boolean piped) {
        super(name, process, log);
        this.host = host;
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

    public Host host() {
        return host;
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
                    name() + " stopped answering (" + e.getMessage() + "); its log:\n" + tail(), e);
        }
    }

    /** Reads the next line an agent says unasked (its ready line); null if it ended. */
    public synchronized String read() {
        try {
            return out.readLine();
        } catch (IOException e) {
            throw new HostLabException(name() + " stopped answering (" + e.getMessage() + ")", e);
        }
    }

    /**
     * The agent's JSON answer to {@code command} (null: the ready line it says unasked); fails if
     * the agent ended first.
     */
    public JsonNode answer(String command) {
        String line = command == null ? read() : ask(command);
        if (line == null) {
            throw new HostLabException(
                    name() + " ended while asked '" + command + "'; its log:\n" + tail());
        }
        return JSON.readTree(line);
    }

    /** As {@link #answer(String)}, and fails unless the answer says {@code "ok":true}. */
    public JsonNode require(String command) {
        JsonNode answer = answer(command);
        if (!answer.path("ok").asBoolean()) {
            throw new HostLabException(name() + " refused '" + command + "': " + answer);
        }
        return answer;
    }

    /** Asks the process to stop (SIGTERM) and returns at once; {@link #close()} waits. */
    void stop() {
        process().destroy();
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
        super.close();
    }
}
