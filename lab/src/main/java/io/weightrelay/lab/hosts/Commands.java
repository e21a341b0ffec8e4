package io.weightrelay.lab.hosts;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the short system commands ({@code ip}, {@code nsenter}, {@code kill}) the lab needs. */
final class Commands {

    /** What a finished command returned. */
    record Result(int exit, String out) {
        boolean ok() {
            return exit == 0;
        }
    }

    private Commands() {}

    /** Runs {@code command}, its stderr merged into the output; at most {@code seconds}. */
    static Result run(List<String> command, int seconds) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getOutputStream().close();
            byte[] out;
            try (InputStream in = p.getInputStream()) {
                out = in.readAllBytes();
            }
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Result(-1, "timed out after " + seconds + " s");
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8).strip());
        } catch (IOException e) {
            return new Result(-1, "cannot run " + command.get(0) + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "interrupted");
        }
    }

    /** Runs {@code command} and fails with its output unless it exits 0. */
    static String check(List<String> command) {
        Result r = run(command, 30);
        if (!r.ok()) {
            throw new HostLabException(
                    "'"
                            + String.join(" ", command)
                            + "' failed (exit "
                            + r.exit()
                            + "): "
                            + r.out());
        }
        return r.out();
    }
}
