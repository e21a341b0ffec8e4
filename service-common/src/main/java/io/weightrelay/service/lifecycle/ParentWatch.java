package io.weightrelay.service.lifecycle;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an action once a given process has ended, or at once when it is already gone. A service
 * started by a supervisor that can die without stopping it (a lab or test JVM killed with SIGKILL)
 * is told its supervisor's pid ({@code relay.parent-pid}) and stops itself rather than stay behind,
 * holding its port, its shared memory and a share of the CPU.
 */
public final class ParentWatch implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ParentWatch.class);

    private final long pid;
    private final CompletableFuture<Void> ended;
    private volatile boolean closed;

    /**
     * Watches {@code pid}; {@code whenGone} runs once, on a JDK thread, when it ends (for a process
     * that is not this one's child the JDK polls for it).
     *
     * @throws IllegalArgumentException if {@code pid} is this process's own
     */
    public ParentWatch(long pid, Runnable whenGone) {
        if (pid == ProcessHandle.current().pid()) {
            throw new IllegalArgumentException(
                    "relay.parent-pid " + pid + " is this process itself, not its parent");
        }
        this.pid = pid;
        Optional<ProcessHandle> parent = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
        CompletableFuture<?> exit =
                parent.isPresent()
                        ? parent.get().onExit()
                        : CompletableFuture.completedFuture(null);
        this.ended =
                exit.thenRun(
                        () -> {
                            if (closed) {
                                return;
                            }
                            log.warn("parent process {} is gone: stopping", pid);
                            whenGone.run();
                        });
    }

    public long pid() {
        return pid;
    }

    /** Stops watching: the action no longer runs (a service that is stopping anyway). */
    @Override
    public void close() {
        closed = true;
    }

    /** Completes once the watched process ended (and the action ran, unless closed before). */
    public CompletableFuture<Void> ended() {
        return ended;
    }
}
