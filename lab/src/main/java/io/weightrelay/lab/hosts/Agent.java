package io.weightrelay.lab.hosts;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import tools.jackson.databind.json.JsonMapper;

/**
 * The agent's side of {@link HostProcess#answer}: a main the lab runs inside a host and talks to
 * one line at a time. Only answers reach stdout (everything else, loggers included, goes to
 * stderr); each command line read from stdin gets one JSON line back, and a command that fails
 * answers {@code {"ok":false,"error":...}}.
 */
public final class Agent {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** What the agent does with one command line, split into words; returns its JSON answer. */
    public interface Handler {
        String handle(String[] words) throws Exception;
    }

    private final PrintStream out;

    private Agent(PrintStream out) {
        this.out = out;
    }

    /** Keeps stdout for the answers and sends everything else to stderr; first thing in a main. */
    public static Agent claimStdout() {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        return new Agent(out);
    }

    /** Says {@code json} unasked (the ready line). */
    public void say(String json) {
        out.println(json);
    }

    /** Answers every command line with {@code handler} until stdin ends. */
    public void serve(Handler handler) throws IOException {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = handler.handle(line.trim().split(" "));
            } catch (Exception | AssertionError e) {
                answer =
                        JSON.writeValueAsString(
                                JSON.createObjectNode()
                                        .put("ok", false)
                                        .put("error", String.valueOf(e)));
            }
            out.println(answer);
        }
    }
}
