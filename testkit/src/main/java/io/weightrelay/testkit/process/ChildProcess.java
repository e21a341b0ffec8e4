package io.weightrelay.testkit.process;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A child process a test or the lab started, its output in a log file: {@link #close()} stops it
 * gracefully and waits, {@link #kill()} ends it at once, as a crash would, and {@link #tail()}
 * tells what it said. {@link ServiceProcess} is one service, {@link ChildJvm} a test's helper JVM
 * on a line channel; the lab's host processes are others.
 */
public class ChildProcess implements AutoCloseable {

    private final String name;
    private final Process process;
    private final Path log;

    /** {@code process}, started as {@code name} with its output going to {@code log}. */
    protected ChildProcess(String name, Process process, Path log) {
        this.process = Objects.requireNonNull(process, "process");
        this.name = name;
        this.log = log;
    }

    public final String name() {
        return name;
    }

    /** The operating system's id of the process (to signal it, as a fault test does). */
    public final long pid() {
        return process.pid();
    }

    public final boolean isAlive() {
        return process.isAlive();
    }

    /** CPU time the process has used so far (zero where the platform does not say). */
    public final Duration cpu() {
        return process.info().totalCpuDuration().orElse(Duration.ZERO);
    }

    /** The process itself, for a subclass that talks to it. */
    protected final Process process() {
        return process;
    }

    /** Where the process's output goes. */
    protected final Path log() {
        return log;
    }

    /** The last lines of the process's log, for error messages. */
    public final String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** How a service's log line begins where it says a dependency it needs does not answer. */
    public static final String UNREACHABLE = "cannot reach ";

    /**
     * Where the process said it cannot reach a dependency it needs ({@code cannot reach Redis at
     * 127.0.0.1:6379 (...): Connection refused}: control-api while its Redis does not answer, a
     * publisher whose data plane cannot reach its Redis), from those words to the end of the line,
     * unless a later line says that dependency answers ({@code Redis at 127.0.0.1:6379 answers});
     * empty otherwise. Whoever waits for the process to turn healthy reads why in seconds.
     */
    public final Optional<String> unreachableDependency() {
        List<String> lines;
        try {
            lines = Files.readAllLines(log);
        } catch (IOException | java.io.UncheckedIOException e) {
            return Optional.empty(); // no log yet, or a line cut in the middle of a character
        }
        String said = null;
        String dependency = null;
        for (String line : lines) {
            int at = line.indexOf(UNREACHABLE);
            if (at >= 0) {
                said = line.substring(at);
                dependency = dependencyOf(said.substring(UNREACHABLE.length()));
            } else if (dependency != null && line.contains(dependency + " answers")) {
                said = null;
                dependency = null;
            }
        }
        return Optional.ofNullable(said);
    }

    /** {@code Redis at 127.0.0.1:6379} of {@code Redis at 127.0.0.1:6379 (...): why}. */
    private static String dependencyOf(String rest) {
        int at = rest.indexOf(" at ");
        if (at < 0) {
            return rest;
        }
        int end = rest.indexOf(' ', at + 4);
        String dependency = end < 0 ? rest : rest.substring(0, end);
        while (!dependency.isEmpty()
                && ";,:.".indexOf(dependency.charAt(dependency.length() - 1)) >= 0) {
            dependency = dependency.substring(0, dependency.length() - 1);
        }
        return dependency;
    }

    /** Ends the process at once (no graceful shutdown), as a crash would. */
    public final void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops the process gracefully (SIGTERM), forcibly after 20 s, and waits for it. */
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
