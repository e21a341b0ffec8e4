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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one fault case proved, counted as {@link FaultResult} counts it, from what the engines and
 * control-api say:
 *
 * <ul>
 *   <li><b>corrupted served</b>: an engine serving (not paused) reports a generation its last
 *       update said it loaded, but the bytes it holds are not that generation's (checked byte for
 *       byte against the trainer's generator);
 *   <li><b>partial served</b>: an engine serving reports a generation whose bytes it does not all
 *       serve from after an update that did not end UPDATED (it resumed on bytes the update
 *       touched: an in-place direct worker's buffers, or a staged one's serving copy; a compat
 *       engine loads its image only at UPDATED), a generation none of its updates ended UPDATED
 *       with, or an instance advanced in a group update that did not end UPDATED everywhere (half
 *       applied);
 *   <li><b>lost committed</b>: a generation committed before the fault is no longer ACTIVE or
 *       RETIRED afterwards, unless the fault itself destroyed the memory that held it (a publisher
 *       killed: without replicas its bytes are gone, and control-api must mark them LOST rather
 *       than serve them).
 * </ul>
 *
 * Problems, the case's own failed conditions among them, are kept in words for the case's detail,
 * also when it fails part-way. One per case run; not thread safe.
 */
final class Ledger {

    long corrupted;
    long partial;
    long lost;
    final List<String> problems = new ArrayList<>();
    private boolean landedMidUpdate;

    /** Per instance, the generations an update of it ended UPDATED with ({@link #checkEngines}). */
    private final Map<String, Set<Long>> delivered = new HashMap<>();

    /** Each engine's generation now (null where its loader does not answer or it holds none). */
    static Map<String, Long> generations(LabCluster lab) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (RolloutEngine e : lab.engines()) {
            try {
                out.put(e.instance(), e.status().getGeneration());
            } catch (RuntimeException ex) {
                out.put(e.instance(), null);
            }
        }
        return out;
    }

    /**
     * Checks every serving engine's bytes against the generation it reports. {@code loaded} says
     * whose last update ended UPDATED: all it received is checked, since it serves that now.
     * Elsewhere what it serves from is checked ({@link #served}). An engine whose loader does not
     * answer serves nothing.
     */
    long observe(LabCluster lab, Set<String> loaded) {
        long verified = 0;
        for (RolloutEngine e : lab.engines()) {
            InstanceStatus status;
            try {
                status = e.status();
            } catch (RuntimeException ex) {
                continue; // its loader is dead: it serves nothing
            }
            if (serving(status)) {
                verified += served(lab, e, status.getGeneration(), loaded.contains(e.instance()));
            }
        }
        return verified;
    }

    /**
     * Records how each engine's update of {@code updates} (in the order of the lab's engines)
     * ended, then checks every serving engine: one holding a generation none of its updates ended
     * UPDATED with advanced without a whole update (a partial generation served); the bytes of each
     * are checked as {@link #observe} does, an engine whose update here did not end UPDATED on what
     * it serves from.
     */
    void checkEngines(LabCluster lab, List<UpdateProgress> updates) {
        List<RolloutEngine> engines = lab.engines();
        Set<String> loaded = new HashSet<>();
        for (int i = 0; i < engines.size(); i++) {
            String instance = engines.get(i).instance();
            UpdateProgress p = i < updates.size() ? updates.get(i) : null;
            if (p == null || p.getOutcome() == UpdateOutcome.UPDATED) {
                loaded.add(instance);
            }
            if (p != null && p.getOutcome() == UpdateOutcome.UPDATED) {
                delivered.computeIfAbsent(instance, k -> new HashSet<>()).add(p.getGeneration());
            }
        }
        for (RolloutEngine engine : engines) {
            InstanceStatus status = engine.status();
            if (!serving(status)) {
                continue;
            }
            Long held = status.getGeneration();
            if (!delivered.getOrDefault(engine.instance(), Set.of()).contains(held)) {
                partial++;
                problems.add(
                        engine.instance()
                                + " reports generation "
                                + held
                                + " although no update of it ended UPDATED");
            }
            served(lab, engine, held, loaded.contains(engine.instance()));
        }
    }

    private static boolean serving(InstanceStatus status) {
        return status.getGeneration() != null && !Boolean.TRUE.equals(status.getPaused());
    }

    /**
     * Checks engine {@code e}'s bytes against generation {@code held}; returns how many were
     * checked. With {@code loaded} all it received is checked, since it serves that now (a mismatch
     * is corruption); else what it serves from ({@link LabCluster#verifyServing}: a mismatch is a
     * partial apply resumed as if whole), since a compat engine's image, which a failed update may
     * have written into, is not what it serves.
     */
    private long served(LabCluster lab, RolloutEngine e, long held, boolean loaded) {
        try {
            return loaded ? lab.verify(e, held) : lab.verifyServing(e, held);
        } catch (AssertionError | RuntimeException ex) {
            if (loaded) {
                corrupted++;
            } else {
                partial++;
            }
            problems.add(
                    e.instance()
                            + " serves generation "
                            + held
                            + " with other bytes: "
                            + ex.getMessage());
            return 0;
        }
    }

    /** After a group update that did not end UPDATED everywhere: no instance may have advanced. */
    void noneAdvanced(LabCluster lab, Map<String, Long> before) {
        generations(lab)
                .forEach(
                        (instance, now) -> {
                            Long was = before.get(instance);
                            if (now != null && !now.equals(was)) {
                                partial++;
                                problems.add(
                                        instance
                                                + " advanced from "
                                                + was
                                                + " to "
                                                + now
                                                + " in an update that failed elsewhere");
                            }
                        });
    }

    /** Every generation in {@code committed} but those in {@code destroyed} is still committed. */
    void stillCommitted(LabCluster lab, List<Long> committed, Set<Long> destroyed) {
        for (long g : committed) {
            if (!destroyed.contains(g)) {
                requireCommitted(lab, g);
            }
        }
    }

    /**
     * Each of {@code generations}, committed before the fault, must still be ACTIVE or RETIRED: one
     * gone from control-api, or OPEN, ABORTED or LOST, is lost.
     */
    void requireCommitted(LabCluster lab, long... generations) {
        for (long g : generations) {
            GenerationState state;
            try {
                state = lab.generation(g).getState();
            } catch (RuntimeException e) {
                lost++;
                problems.add("committed generation " + g + " is gone: " + e.getMessage());
                continue;
            }
            if (state != GenerationState.ACTIVE && state != GenerationState.RETIRED) {
                lost++;
                problems.add("committed generation " + g + " is " + state);
            }
        }
    }

    /** Every engine holds one of {@code allowed}; else a problem named. */
    void requireHeld(LabCluster lab, Set<Long> allowed) {
        for (RolloutEngine engine : lab.engines()) {
            Long held = engine.status().getGeneration();
            if (held == null || !allowed.contains(held)) {
                problems.add(engine.instance() + " holds " + held + ", expected one of " + allowed);
            }
        }
    }

    /**
     * The system serves the next update: the trainer publishes step {@code step}, every engine
     * updates to it and holds its bytes. Returns the generation, or -1 after naming the problem.
     */
    long serveNext(LabCluster lab, long step) throws Exception {
        long next;
        try {
            next = lab.publish(step);
        } catch (RuntimeException e) {
            problems.add("the next publish (step " + step + ") failed: " + e.getMessage());
            return -1;
        }
        LabUpdate updates = lab.updateAll();
        checkEngines(lab, updates.results());
        requireUpdatedTo(updates.results(), next, "the next update");
        requireHeld(lab, Set.of(next));
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

    /** The case stopped on {@code e}: a problem named after it. */
    void threw(Throwable e) {
        problems.add(e.getClass().getSimpleName() + ": " + e.getMessage());
    }

    /** Records whether the case proved that its fault landed while an update still ran. */
    void landedMidUpdate(boolean landed) {
        landedMidUpdate = landed;
    }

    boolean clean() {
        return corrupted == 0 && partial == 0 && lost == 0 && problems.isEmpty();
    }

    /**
     * The case's result: passed when {@link #clean()}, its {@code detail} followed by every
     * problem; {@code claimsMidUpdate} as the case says ({@link FaultCase#claimsMidUpdate()}).
     */
    FaultResult result(String name, String detail, long startedNanos, boolean claimsMidUpdate) {
        return new FaultResult(
                name,
                clean(),
                problems.isEmpty() ? detail : detail + "; " + String.join("; ", problems),
                corrupted,
                partial,
                lost,
                (System.nanoTime() - startedNanos) / 1e9,
                claimsMidUpdate,
                landedMidUpdate);
    }
}
