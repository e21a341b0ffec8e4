package io.weightrelay.lab.faults;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A case on the suite's shared local lab, declared as data: its name, its {@link Injection} and how
 * the active generation is proven intact afterwards. It finds every engine on the active
 * generation, injects its fault and checks what the system did, then proves the three invariants:
 * the active generation is intact (loaded afresh by every engine and checked byte for byte, or,
 * where the fault destroyed its memory, the engines' bytes checked), no engine ever served bytes
 * that are not all of the generation it reports ({@link Ledger}), and the trainer's next publish
 * reaches every engine.
 *
 * @param name a short kebab-case name, one row of {@code ./relay faults}
 * @param injection the fault and the checks of what the system did about it
 * @param destroysActive whether the fault destroys the active generation's bytes: loading it afresh
 *     would prove nothing, so the engines' bytes are checked instead
 * @param shape the shared lab the fault is injected into
 * @param midApply whether the fault is injected while the group applies; its injection proves that
 *     it was (it fails rather than returns when the apply ended first)
 */
record LabCase(
        String name,
        Injection injection,
        boolean destroysActive,
        SharedLab.Shape shape,
        boolean midApply)
        implements FaultCase {

    /**
     * The timeout of the cases' updates: generous, since a loaded two-core machine can take minutes
     * over what is milliseconds alone; a case that needs a dead participant noticed sooner passes
     * its own ({@link LoaderKilledMidApplyCase#PHASE_TIMEOUT}).
     */
    static final Duration UPDATE_TIMEOUT = Duration.ofMinutes(5);

    /** How long a case waits for any update: past twice its timeout, never a hang. */
    static final Duration UPDATE_WAIT = Duration.ofMinutes(11);

    /** The running lab a fault is injected into, found with every engine on {@code active}. */
    record Fault(SharedLab.Borrowed borrowed, Ledger ledger, long active) {

        LabCluster lab() {
            return borrowed.lab;
        }

        /** Publishes the trainer's next step; returns its generation. */
        long publish() {
            return borrowed.publish();
        }

        long nextStep() {
            return borrowed.nextStep();
        }

        /**
         * Updates every engine to the newest generation where the fault must refuse that update
         * everywhere: records in the ledger any instance that advanced anyway; returns how each
         * engine's update ended, for the case to check.
         */
        List<Engines.Ended> updateNoneAdvancing() throws Exception {
            return updateNoneAdvancing(UPDATE_TIMEOUT);
        }

        /** As {@link #updateNoneAdvancing()}, each update with {@code timeout}. */
        List<Engines.Ended> updateNoneAdvancing(Duration timeout) throws Exception {
            Map<String, Long> before = Ledger.generations(lab());
            List<Engines.Ended> ended = Engines.update(lab().engines(), timeout, UPDATE_WAIT);
            ledger.noneAdvanced(lab(), before);
            return ended;
        }

        /**
         * Starts instance {@code index} again with a fresh loader, which alone must load the active
         * generation {@code active}, no republish, every byte verified.
         */
        Reloaded restartLoadingAlone(int index, long active) throws Exception {
            RolloutEngine fresh = lab().restartInstance(index);
            Engines.Ended alone =
                    requireUpdatedTo(List.of(fresh), active, "the restarted loader loads").get(0);
            return new Reloaded(fresh, alone.progress(), lab().verify(fresh, active));
        }

        /** The fault destroyed {@code generation}'s memory: it need not stay committed. */
        void destroyed(long generation) {
            borrowed.destroyed.add(generation);
        }

        /**
         * Garbage collection removed {@code generation} (retired, and nobody held it any longer):
         * it need not stay committed.
         */
        void collected(long generation) {
            borrowed.destroyed.add(generation);
        }

        /** Without replicas, the fault destroyed every committed generation's memory. */
        void destroyedEveryCommitted() {
            borrowed.destroyed.addAll(borrowed.committed);
        }
    }

    /** An instance started again with a fresh loader, how its update ended and what it verified. */
    record Reloaded(RolloutEngine engine, UpdateProgress progress, long verified) {}

    /** Injects the fault into the running lab and checks the outcome; returns what happened. */
    @FunctionalInterface
    interface Injection {
        String inject(Fault fault) throws Exception;
    }

    /** A case after which every engine loads the active generation afresh. */
    static LabCase reloadingActive(String name, Injection injection) {
        return reloadingActive(name, injection, SharedLab.Shape.COMPAT_PAIR);
    }

    /** As {@link #reloadingActive(String, Injection)}, on the shared lab of {@code shape}. */
    static LabCase reloadingActive(String name, Injection injection, SharedLab.Shape shape) {
        return new LabCase(name, injection, false, shape, false);
    }

    /**
     * A case whose injection catches the group mid-apply and fails when it cannot (every engine
     * reloads the active generation afterwards), on the shared lab of {@code shape}.
     */
    static LabCase midApply(String name, Injection injection, SharedLab.Shape shape) {
        return new LabCase(name, injection, false, shape, true);
    }

    /**
     * A case whose fault destroys the active generation's bytes: loading it afresh would prove
     * nothing, so the engines' bytes are checked instead.
     */
    static LabCase destroyingActive(String name, Injection injection) {
        return new LabCase(name, injection, true, SharedLab.Shape.COMPAT_PAIR, false);
    }

    /**
     * A case whose injection catches the group mid-apply (failing when it cannot) and whose fault
     * destroys the active generation's bytes: the engines' bytes are checked afterwards.
     */
    static LabCase destroyingActiveMidApply(String name, Injection injection) {
        return new LabCase(name, injection, true, SharedLab.Shape.COMPAT_PAIR, true);
    }

    @Override
    public boolean claimsMidUpdate() {
        return midApply;
    }

    @Override
    public FaultResult run(FaultContext context) {
        long started = System.nanoTime();
        Ledger ledger = new Ledger();
        String detail = "failed";
        SharedLab.Borrowed b = null;
        try {
            b = SharedLab.borrow(context, shape);
            if (b.committed.isEmpty()) {
                long first = b.publish();
                requireUpdated(b.lab, first, ledger);
            }
            List<Long> before = List.copyOf(b.committed);
            detail =
                    injection.inject(
                            new Fault(b, ledger, b.lab.activeGeneration().getGeneration()));
            activeIntact(b, ledger);
            ledger.stillCommitted(b.lab, before, b.destroyed);
            long next = b.publish();
            requireUpdated(b.lab, next, ledger);
            ledger.observe(b.lab, allInstances(b.lab));
            // a mid-apply injection fails rather than returns when the apply ended first
            ledger.landedMidUpdate(midApply && ledger.clean());
        } catch (Exception | AssertionError e) {
            ledger.threw(e);
            if (b != null) {
                b.lab.dumpLogs();
            }
            SharedLab.discard(context);
        }
        return ledger.result(name(), detail, started, midApply);
    }

    /**
     * Every engine registers again (a fresh epoch in the lab's group) and loads the active
     * generation from the store; every byte is checked. Where the fault destroyed the active
     * generation's memory this proves nothing and the engines' bytes are checked instead.
     */
    private void activeIntact(SharedLab.Borrowed b, Ledger ledger) throws Exception {
        if (destroysActive) {
            ledger.observe(b.lab, allInstances(b.lab));
            return;
        }
        Generation active = b.lab.activeGeneration();
        if (active.getState() == GenerationState.LOST) {
            throw new AssertionError(
                    "the active generation " + active.getGeneration() + " is LOST");
        }
        b.lab.reRegisterAll();
        requireUpdated(b.lab, active.getGeneration(), ledger);
    }

    /** Updates every engine; all must end UPDATED on {@code generation} and verify. */
    static void requireUpdated(LabCluster lab, long generation, Ledger ledger) throws Exception {
        requireUpdatedTo(lab.engines(), generation, "an update to");
        if (lab.verifyAll(generation) <= 0) {
            throw new AssertionError("nothing verified of generation " + generation);
        }
    }

    /**
     * Updates {@code engines} to the active generation; each must end UPDATED on {@code
     * generation}, else {@code what}, the generation and how it ended are the error. Returns how
     * each ended.
     */
    static List<Engines.Ended> requireUpdatedTo(
            List<RolloutEngine> engines, long generation, String what) throws InterruptedException {
        List<Engines.Ended> ended = Engines.update(engines, UPDATE_TIMEOUT, UPDATE_WAIT);
        for (Engines.Ended e : ended) {
            check(
                    e.updated() && e.progress().getGeneration() == generation,
                    what + " " + generation + ": " + e.describe());
        }
        return ended;
    }

    /**
     * How an update of {@code lab}'s engines ends when it fails after the prepared barrier, before
     * any install: {@code PAUSED_REBUILD} where an engine's fetch writes the weights it serves from
     * (in-place direct workers, whose buffers may then hold a mix), else {@code RESUMED_OLD}:
     * compat workers receive into an image apart from the engine's weights and staged direct
     * workers into the loader's own copy, so every engine keeps serving its old generation. Asks
     * every loader: call it before a fault that kills one.
     */
    static UpdateOutcome failedFetchOutcome(LabCluster lab) {
        for (RolloutEngine engine : lab.engines()) {
            InstanceStatus s = engine.status();
            boolean inPlace =
                    s.getDirectInstall() != DirectInstall.STAGED
                            && s.getWorkers().stream()
                                    .anyMatch(w -> w.getMode() == ConsumeMode.DIRECT);
            if (inPlace) {
                return UpdateOutcome.PAUSED_REBUILD;
            }
        }
        return UpdateOutcome.RESUMED_OLD;
    }

    /** The group's session state that goes with an update's failed {@code outcome}. */
    static SessionState sessionState(UpdateOutcome outcome) {
        return switch (outcome) {
            case RESUMED_OLD -> SessionState.RESUMED_OLD;
            case PAUSED_REBUILD -> SessionState.PAUSED_REBUILD;
            default -> throw new IllegalArgumentException("not a failed outcome: " + outcome);
        };
    }

    /**
     * Every engine but {@code except} (null: none) holds {@code generation}, paused for rebuild if
     * {@code paused}, else serving it.
     */
    static void requireHolding(LabCluster lab, long generation, boolean paused, String except) {
        for (RolloutEngine engine : lab.engines()) {
            if (engine.instance().equals(except)) {
                continue;
            }
            InstanceStatus s = engine.status();
            check(
                    paused == Boolean.TRUE.equals(s.getPaused())
                            && Long.valueOf(generation).equals(s.getGeneration()),
                    engine.instance()
                            + (paused ? " is paused on " : " resumed on ")
                            + generation
                            + ": "
                            + s.getGeneration());
        }
    }

    /**
     * Every engine of {@code ended} but {@code except} (null: none) ended {@code outcome} and was
     * told why: {@code culprit} (or, for an instance, one of its workers) is its failing peer, or
     * {@code culprit} is named in its error.
     */
    static void requireEnded(
            List<Engines.Ended> ended, UpdateOutcome outcome, String culprit, String except) {
        for (Engines.Ended e : ended) {
            if (e.instance().equals(except)) {
                continue;
            }
            check(e.outcome() == outcome, "expected " + outcome + ": " + e.describe());
            String failingPeer = e.progress().getFailingPeer();
            check(
                    culprit.equals(failingPeer)
                            || workerOf(failingPeer, culprit)
                            || String.valueOf(e.progress().getError()).contains(culprit),
                    "the failure names " + culprit + ": " + e.describe());
        }
    }

    /**
     * Whether {@code peer} is a worker of instance {@code instance} (ids {@code
     * <instance>-r<rank>}).
     */
    static boolean workerOf(String peer, String instance) {
        return peer != null && peer.startsWith(instance + "-r");
    }

    /** The group's session ended the way its engines' failed {@code outcome} says. */
    static void requireSessionEnded(UpdateSession session, UpdateOutcome outcome) {
        check(
                session.getState() == sessionState(outcome),
                "the session ends " + outcome + ": " + session.getState());
    }

    /**
     * Generation {@code g} is {@code state} and not marked corrupt, and {@code active} is the
     * active generation; else {@code what} and what control-api says are the error.
     */
    static void requireGeneration(
            LabCluster lab, long g, GenerationState state, long active, String what) {
        Generation found = lab.generation(g);
        long activeNow = lab.activeGeneration().getGeneration();
        check(
                found.getCorruptObject() == null
                        && found.getState() == state
                        && activeNow == active,
                String.format(
                        "%s: generation %d %s (expected %s), corrupt object %s, active %d"
                                + " (expected %d)",
                        what,
                        g,
                        found.getState(),
                        state,
                        found.getCorruptObject(),
                        activeNow,
                        active));
    }

    /**
     * Generation {@code g}, whose update one loader's fault failed, is not marked corrupt
     * (control-api found its stored bytes as published) and stays the active one.
     */
    static void requireStillActive(LabCluster lab, long g) {
        requireGeneration(
                lab, g, GenerationState.ACTIVE, g, "not marked corrupt on one loader's word");
    }

    /** The first line of {@code s}, cut at 240 characters, for a case's one-line detail. */
    static String firstLine(String s) {
        String one = String.valueOf(s).lines().findFirst().orElse("");
        return one.length() > 240 ? one.substring(0, 240) + "..." : one;
    }

    static Set<String> allInstances(LabCluster lab) {
        Set<String> all = new HashSet<>();
        for (RolloutEngine e : lab.engines()) {
            all.add(e.instance());
        }
        return all;
    }

    static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }
}
