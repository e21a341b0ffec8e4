package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.UPDATE_WAIT;
import static io.weightrelay.lab.faults.LabCase.allInstances;
import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.control.client.model.ParticipantState;
import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.lab.cluster.LabCluster;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An update of every engine caught with a process frozen (SIGSTOP) inside the group's apply, the
 * story the mid-apply cases share. A tiny model's apply can end before a watch sees it, so each try
 * publishes a generation, starts every engine's update and lets the case's {@link Freeze} look for
 * the moment; a try that missed it lets the update finish (every engine must end UPDATED) and the
 * next generation is tried, at most {@link #ATTEMPTS} times.
 *
 * @param generation the generation the caught update goes to
 * @param previous the generation every engine served before it
 * @param attempt which try caught it, from 1
 * @param how how the process was caught, for the case's detail
 * @param before each engine's generation before the update
 * @param running the engines' updates, still running
 */
record MidApply(
        long generation,
        long previous,
        int attempt,
        String how,
        Map<String, Long> before,
        Engines.Running running) {

    static final int ATTEMPTS = 5;

    /** Freezes a process of the lab inside the apply of a generation. */
    @FunctionalInterface
    interface Freeze {
        /** Returns how the process was caught, or null when the apply ended first (it runs on). */
        String in(long generation) throws Exception;
    }

    /**
     * Publishes and updates every engine, each update with {@code timeout}, until {@code freeze}
     * catches {@code what} (the apply of an instance, the group's apply) mid-apply.
     */
    static MidApply caught(LabCase.Fault fault, Duration timeout, String what, Freeze freeze)
            throws Exception {
        LabCluster lab = fault.lab();
        long previous = fault.active();
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            long g = fault.publish();
            Map<String, Long> before = Ledger.generations(lab);
            Engines.Running running = Engines.start(lab.engines(), timeout);
            String how = freeze.in(g);
            if (how != null) {
                return new MidApply(g, previous, attempt, how, before, running);
            }
            // the apply ended before the watch saw it: let it finish, try the next generation
            for (Engines.Ended e : running.await(UPDATE_WAIT)) {
                check(e.updated(), "an update with no fault: " + e.describe());
            }
            fault.ledger().observe(lab, allInstances(lab));
            previous = g;
        }
        throw new AssertionError(
                what + " never lasted long enough to be caught in " + ATTEMPTS + " tries");
    }

    /** Awaits every engine's end and records what {@link #noneAdvanced} records. */
    List<Engines.Ended> awaitNoneAdvancing(LabCase.Fault fault) throws InterruptedException {
        List<Engines.Ended> ended = running.await(UPDATE_WAIT);
        noneAdvanced(fault);
        return ended;
    }

    /**
     * Records in the ledger any engine that advanced in the caught update and what every engine
     * serves (none loaded anything new).
     */
    void noneAdvanced(LabCase.Fault fault) {
        fault.ledger().noneAdvanced(fault.lab(), before);
        fault.ledger().observe(fault.lab(), Set.of());
    }

    /**
     * Watches the session of {@code generation} until the apply barrier is open and {@code
     * instance} has not reported APPLIED, then freezes its loader {@code pid} and checks again.
     * Returns the phase it was frozen in, or null if the apply ended first (the loader is running
     * then).
     */
    static String freezeLoader(LabCluster lab, long generation, String instance, long pid)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            UpdateSession s;
            try {
                s = lab.session(generation, "lab");
            } catch (RuntimeException notYet) {
                Thread.sleep(2);
                continue;
            }
            if (s.getState() != SessionState.APPLYING && s.getState() != SessionState.PREPARING) {
                return null;
            }
            UpdatePhase phase = phase(s, instance);
            if (s.getState() == SessionState.APPLYING && beforeApplied(phase)) {
                signal("STOP", pid);
                UpdatePhase frozen = phase(lab.session(generation, "lab"), instance);
                if (beforeApplied(frozen)) {
                    return "in " + frozen + " with the apply barrier open";
                }
                signal("CONT", pid);
                return null;
            }
        }
        return null;
    }

    private static boolean beforeApplied(UpdatePhase phase) {
        return phase == UpdatePhase.PREPARED || phase == UpdatePhase.APPLYING;
    }

    private static UpdatePhase phase(UpdateSession s, String instance) {
        for (ParticipantState p : s.getParticipants()) {
            if (p.getInstance().equals(instance)) {
                return p.getPhase();
            }
        }
        return null;
    }

    /** Sends {@code signal} (STOP, CONT) to process {@code pid}. */
    static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process p =
                new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IOException("kill -" + signal + " " + pid + " failed");
        }
    }
}
