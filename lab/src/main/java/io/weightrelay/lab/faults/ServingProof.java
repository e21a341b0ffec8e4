package io.weightrelay.lab.faults;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The three things every fault case proves, counted as {@link FaultResult} counts them: what each
 * engine reports holding is all of that generation (bytes checked by the lab's verifier), the
 * generations committed before the fault are still there, and the system serves the next update.
 * One per case run; not thread safe.
 */
final class ServingProof {

    private final LabCluster lab;
    private long corruptedServed;
    private long partialServed;
    private long lostCommitted;
    private final List<String> problems = new ArrayList<>();
    private boolean claimsMidUpdate;
    private boolean provedMidUpdate;

    /** Per instance, the generations an update of it ended UPDATED with. */
    private final Map<String, Set<Long>> delivered = new HashMap<>();

    ServingProof(LabCluster lab) {
        this.lab = lab;
    }

    /**
     * Checks every serving engine's bytes against the generation it reports holding. An engine
     * holding a generation none of its updates ended {@code UPDATED} with advanced without a whole
     * update (a partial generation served); one whose bytes are not all of the generation it
     * reports is a corrupted one served. An engine whose update in {@code updates} did not end
     * {@code UPDATED} serves what it loaded before ({@link LabCluster#verifyServing}: a compat
     * engine's image, which that update may have written into, is loaded only at {@code UPDATED});
     * every other one serves all its loader received. A paused engine serves nothing.
     */
    void checkEngines(List<UpdateProgress> updates) {
        List<RolloutEngine> engines = lab.engines();
        Set<String> failedNow = new HashSet<>();
        for (int i = 0; i < updates.size() && i < engines.size(); i++) {
            UpdateProgress p = updates.get(i);
            if (p.getOutcome() == UpdateOutcome.UPDATED) {
                delivered
                        .computeIfAbsent(engines.get(i).instance(), k -> new HashSet<>())
                        .add(p.getGeneration());
            } else {
                failedNow.add(engines.get(i).instance());
            }
        }
        for (RolloutEngine engine : engines) {
            InstanceStatus status = engine.status();
            Long held = status.getGeneration();
            if (held == null || Boolean.TRUE.equals(status.getPaused())) {
                continue;
            }
            if (!delivered.getOrDefault(engine.instance(), Set.of()).contains(held)) {
                partialServed++;
                problems.add(
                        engine.instance()
                                + " reports generation "
                                + held
                                + " although no update of it ended UPDATED");
            }
            try {
                if (failedNow.contains(engine.instance())) {
                    lab.verifyServing(engine, held);
                } else {
                    lab.verify(engine, held);
                }
            } catch (AssertionError | RuntimeException e) {
                corruptedServed++;
                problems.add(
                        engine.instance()
                                + " reports generation "
                                + held
                                + " but its bytes are not: "
                                + e.getMessage());
            }
        }
    }

    /** Every engine holds one of {@code allowed}; else a problem named. */
    void requireHeld(Set<Long> allowed) {
        for (RolloutEngine engine : lab.engines()) {
            Long held = engine.status().getGeneration();
            if (held == null || !allowed.contains(held)) {
                problems.add(engine.instance() + " holds " + held + ", expected one of " + allowed);
            }
        }
    }

    /** Each of {@code generations}, committed before the fault, must still be ACTIVE or RETIRED. */
    void requireCommitted(long... generations) {
        for (long generation : generations) {
            String problem =
                    Ledger.lostCommitted(
                            lab,
                            generation,
                            state ->
                                    state != GenerationState.ACTIVE
                                            && state != GenerationState.RETIRED);
            if (problem != null) {
                lostCommitted++;
                problems.add(problem);
            }
        }
    }

    /**
     * The system serves the next update: the trainer publishes step {@code step}, every engine
     * updates to it and holds its bytes. Returns the generation, or -1 after naming the problem.
     */
    long serveNext(long step) throws Exception {
        long next;
        try {
            next = lab.publish(step);
        } catch (RuntimeException e) {
            problems.add("the next publish (step " + step + ") failed: " + e.getMessage());
            return -1;
        }
        LabUpdate updates = lab.updateAll();
        checkEngines(updates.results());
        requireUpdatedTo(updates.results(), next, "the next update");
        requireHeld(Set.of(next));
        return next;
    }

    /**
     * Every one of {@code updates} ended UPDATED on {@code generation}; else a problem naming the
     * update ({@code which}, then its id) and how it ended.
     */
    void requireUpdatedTo(List<UpdateProgress> updates, long generation, String which) {
        for (UpdateProgress p : updates) {
            require(
                    p.getOutcome() == UpdateOutcome.UPDATED && p.getGeneration() == generation,
                    which
                            + " "
                            + p.getUpdateId()
                            + " ended "
                            + p.getOutcome()
                            + " at "
                            + p.getGeneration()
                            + ": "
                            + p.getError());
        }
    }

    /** How each of {@code updates} ended, {@code OUTCOME@generation (first line of its error)}. */
    static List<String> ends(List<UpdateProgress> updates) {
        List<String> ends = new ArrayList<>();
        for (UpdateProgress p : updates) {
            ends.add(
                    p.getOutcome()
                            + "@"
                            + p.getGeneration()
                            + (p.getError() == null
                                    ? ""
                                    : " (" + LabCase.firstLine(p.getError()) + ")"));
        }
        return ends;
    }

    /** A condition of the case itself, named when it fails. */
    void require(boolean condition, String problem) {
        if (!condition) {
            problems.add(problem);
        }
    }

    /**
     * Records that the case injected its fault into a running update ({@link MidUpdate}), and
     * whether the fault landed while that update still ran.
     */
    void injectedMidUpdate(boolean landedMidUpdate) {
        claimsMidUpdate = true;
        provedMidUpdate = landedMidUpdate;
    }

    boolean passed() {
        return problems.isEmpty()
                && corruptedServed == 0
                && partialServed == 0
                && lostCommitted == 0;
    }

    FaultResult result(String name, String detail, long startedNanos) {
        String text = passed() ? detail : String.join("; ", problems) + " (" + detail + ")";
        return new FaultResult(
                name,
                passed(),
                text,
                corruptedServed,
                partialServed,
                lostCommitted,
                (System.nanoTime() - startedNanos) / 1e9,
                claimsMidUpdate,
                provedMidUpdate);
    }
}
