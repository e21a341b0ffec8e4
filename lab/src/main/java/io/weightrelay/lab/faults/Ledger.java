package io.weightrelay.lab.faults;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The three counts every case reports, from what the engines and control-api say:
 *
 * <ul>
 *   <li><b>corrupted served</b>: an engine serving (not paused) reports a generation its last
 *       update said it loaded, but the bytes it holds are not that generation's (checked byte for
 *       byte against the trainer's generator);
 *   <li><b>partial served</b>: an engine serving reports a generation whose bytes it does not all
 *       serve from after an update that did not end UPDATED (it resumed on bytes the update
 *       touched: an in-place direct worker's buffers, or a staged one's serving copy; a compat
 *       engine loads its image only at UPDATED), or an instance advanced in a group update that did
 *       not end UPDATED everywhere (half applied);
 *   <li><b>lost committed</b>: a generation committed before the fault is LOST or gone afterwards,
 *       unless the fault itself destroyed the memory that held it (a publisher killed: without
 *       replicas its bytes are gone, and control-api must mark them LOST rather than serve them).
 * </ul>
 *
 * Problems are kept in words for the case's detail.
 */
final class Ledger {

    long corrupted;
    long partial;
    long lost;
    final List<String> problems = new ArrayList<>();

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
     * whose last update ended UPDATED: all it received is checked, since it serves that now (a
     * mismatch is corruption). Elsewhere what it serves from is checked ({@link
     * LabCluster#verifyServing}: a mismatch is a partial apply resumed as if whole); a compat
     * engine's image, which a failed update may have written into, is not what it serves.
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
            if (Boolean.TRUE.equals(status.getPaused()) || status.getGeneration() == null) {
                continue;
            }
            try {
                verified +=
                        loaded.contains(e.instance())
                                ? lab.verify(e, status.getGeneration())
                                : lab.verifyServing(e, status.getGeneration());
            } catch (AssertionError | RuntimeException ex) {
                if (loaded.contains(e.instance())) {
                    corrupted++;
                } else {
                    partial++;
                }
                problems.add(
                        e.instance()
                                + " serves generation "
                                + status.getGeneration()
                                + " with other bytes: "
                                + ex.getMessage());
            }
        }
        return verified;
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

    /**
     * Why committed generation {@code g} counts as lost: gone from control-api, or in a state
     * {@code lost} accepts; null while it is kept.
     */
    static String lostCommitted(LabCluster lab, long g, Predicate<GenerationState> lost) {
        GenerationState state;
        try {
            state = lab.generation(g).getState();
        } catch (RuntimeException e) {
            return "committed generation " + g + " is gone: " + e.getMessage();
        }
        return lost.test(state) ? "committed generation " + g + " is " + state : null;
    }

    /** Every generation in {@code committed} but those in {@code destroyed} is still loadable. */
    void stillCommitted(LabCluster lab, List<Long> committed, Set<Long> destroyed) {
        for (long g : committed) {
            if (destroyed.contains(g)) {
                continue;
            }
            String problem =
                    lostCommitted(
                            lab,
                            g,
                            state ->
                                    state == GenerationState.LOST
                                            || state == GenerationState.ABORTED
                                            || state == GenerationState.OPEN);
            if (problem != null) {
                lost++;
                problems.add(problem);
            }
        }
    }

    boolean clean() {
        return corrupted == 0 && partial == 0 && lost == 0 && problems.isEmpty();
    }
}
