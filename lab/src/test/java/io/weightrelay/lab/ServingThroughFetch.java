package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.lab.rollout.ServingEngine;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.Mode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;

/**
 * Issue 51: engines keep serving while their update fetches and pause only to install. Four
 * simulated engines (compat, or direct registered staged) serve requests from their own serving
 * weights on threads of their own through an update installed on request and through one whose
 * fetch fails; every request is told by what it read which generation served it. Proves that no
 * request read a mix of two generations, that none was served during a pause, that each engine
 * paused once, after its group fetched, for less than the fetch took, and that the failed fetch
 * left every engine serving the old generation, never paused and not paused for rebuild, and the
 * group's session ended RESUMED_OLD; then that a one-call update whose fetch fails ends the same
 * way. {@link LabEndToEndTest} runs it on its lab of each mode, before the end-to-end story that
 * breaks that lab, so both share one lab start per mode.
 */
final class ServingThroughFetch {

    private static final Duration TIMEOUT = Duration.ofMinutes(5);

    private ServingThroughFetch() {}

    /**
     * The story on {@code lab} (tiny, four instances x tp 2, in {@code mode}, usable and serving no
     * update), its trainer steps taken from {@code steps} (steps nobody published there yet).
     * Leaves the lab usable: its last update delivers and verifies every byte. In direct mode the
     * engines stay registered staged.
     */
    static void enginesServeThroughTheFetchAndPauseOnlyToInstall(
            LabCluster lab, Mode mode, LongSupplier steps) throws Exception {
        if (mode == Mode.DIRECT) {
            lab.directInstall(DirectInstall.STAGED);
            assertThat(lab.engines().get(0).status().getStagedBytes()).isPositive();
        }
        long old = lab.publish(steps.getAsLong());
        lab.updateAll().requireUpdated();
        lab.verifyAll(old);

        List<ServingEngine> engines = new ArrayList<>();
        for (RolloutEngine e : lab.engines()) {
            ServingEngine s = ServingEngine.of(e);
            s.load();
            assertThat(s.servingFingerprint()).isEqualTo(s.receivedFingerprint());
            engines.add(s);
        }
        List<ServingEngine.Fingerprint> oldPrints =
                engines.stream().map(ServingEngine::servingFingerprint).toList();
        try {
            engines.forEach(ServingEngine::startServing);

            long next = lab.publish(steps.getAsLong());
            List<ServingEngine.Timing> timings = updateServing(engines, next);
            for (ServingEngine.Timing t : timings) {
                assertThat(t.end().getOutcome()).isEqualTo(UpdateOutcome.UPDATED);
            }
            lab.verifyAll(next);
            List<ServingEngine.Fingerprint> nextPrints = new ArrayList<>();
            for (ServingEngine s : engines) {
                assertThat(s.servingFingerprint())
                        .as("installed: it serves what its loader received")
                        .isEqualTo(s.receivedFingerprint());
                nextPrints.add(s.servingFingerprint());
            }

            // A fetch that fails: one stored object of the next generation is corrupt.
            long bad = lab.publish(steps.getAsLong());
            lab.faults().corruptAnObject(bad);
            int servedBefore = engines.get(0).requests().size();
            for (ServingEngine.Timing t : updateServing(engines, bad)) {
                assertThat(t.end().getOutcome())
                        .as(t.end().getError())
                        .isEqualTo(UpdateOutcome.RESUMED_OLD);
                assertThat(t.pauseS()).isZero();
            }
            // The group's session says so too: every engine serves the old generation and none
            // paused, so it ended RESUMED_OLD, not PAUSED_REBUILD.
            assertThat(lab.session(bad, "lab").getState()).isEqualTo(SessionState.RESUMED_OLD);
            Thread.sleep(200);
            assertThat(engines.get(0).requests().size())
                    .as("still serving after the failed fetch")
                    .isGreaterThan(servedBefore);
            for (ServingEngine s : engines) {
                InstanceStatus status = s.engine().status();
                assertThat(status.getPaused()).isFalse();
                assertThat(status.getGeneration()).isEqualTo(next);
            }
            engines.forEach(ServingEngine::close);

            for (int i = 0; i < engines.size(); i++) {
                ServingEngine s = engines.get(i);
                ServingEngine.Timing t = timings.get(i);
                Map<Long, ServingEngine.Fingerprint> known =
                        Map.of(old, oldPrints.get(i), next, nextPrints.get(i));
                assertThat(s.servedByGeneration(known))
                        .as(s.engine().instance() + ": no request read a mix")
                        .doesNotContainKey(-1L)
                        .containsKeys(old, next);
                assertThat(s.servedWhilePaused()).isFalse();
                assertThat(s.pauses()).as("one pause: the install of " + next).hasSize(1);
                ServingEngine.Pause pause = s.pauses().get(0);
                assertThat(pause.from()).isGreaterThanOrEqualTo(t.fetchedAt());
                long servedDuringFetch =
                        s.requests().stream()
                                .filter(r -> r.endedAt() <= t.fetchedAt())
                                .filter(r -> r.startedAt() >= t.fetchedAt() - nanos(t.fetchS()))
                                .count();
                assertThat(servedDuringFetch).as("served through the fetch").isPositive();
                for (ServingEngine.Request r : s.requests()) {
                    long served = ServingEngine.generationOf(r, known);
                    assertThat(served)
                            .as("before the pause the old generation, after it the new")
                            .isEqualTo(r.endedAt() <= pause.from() ? old : next);
                }
                assertThat(pause.seconds())
                        .as("the pause is the install, shorter than the fetch")
                        .isLessThan(t.fetchS());
                assertThat(t.end().getDurations().getPauseMs())
                        .isEqualTo(t.end().getDurations().getInstallMs());
            }
        } finally {
            for (ServingEngine s : engines) {
                s.close();
            }
        }
        aOneCallFetchThatFailsResumesTheOldGeneration(lab, mode, steps);
    }

    /**
     * The same lab, an update in one call (the engines drained before they called) whose fetch
     * fails after every byte landed: the fetch wrote nothing the engines serve from (a compat
     * worker's image, a staged worker's receive buffers), so every engine ends RESUMED_OLD, not
     * paused, serving what it served before byte for byte (a staged worker's serving copy checked
     * against the generator), the group's session ends RESUMED_OLD, and the next update needs no
     * rebuild. (An in-place direct worker's fetch writes what its engine serves: the fault suite's
     * byte-flipped-in-flight-direct proves it pauses for a rebuild.)
     */
    private static void aOneCallFetchThatFailsResumesTheOldGeneration(
            LabCluster lab, Mode mode, LongSupplier steps) throws Exception {
        long old = lab.engines().get(0).status().getGeneration();
        List<ServingEngine> engines = new ArrayList<>();
        List<ServingEngine.Fingerprint> oldPrints = new ArrayList<>();
        try {
            for (RolloutEngine e : lab.engines()) {
                ServingEngine s = ServingEngine.of(e);
                engines.add(s);
                s.load(); // the engine's own load at UPDATED (a compat worker copies its image)
                oldPrints.add(s.servingFingerprint());
            }
            long bad = lab.publish(steps.getAsLong());
            StoredFragment victim = lab.faults().corruptAnObject(bad);
            for (UpdateProgress p : lab.updateAll().results()) {
                assertThat(p.getOutcome()).as(p.getError()).isEqualTo(UpdateOutcome.RESUMED_OLD);
                assertThat(p.getError()).contains(victim.fragment());
            }
            assertThat(lab.session(bad, "lab").getState()).isEqualTo(SessionState.RESUMED_OLD);
            for (int i = 0; i < engines.size(); i++) {
                ServingEngine s = engines.get(i);
                RolloutEngine e = s.engine();
                InstanceStatus status = e.status();
                assertThat(status.getGeneration()).isEqualTo(old);
                assertThat(status.getPaused()).isFalse();
                assertThatThrownBy(() -> lab.verify(e, old))
                        .as(e.instance() + ": the fetch wrote its receive buffers")
                        .isInstanceOf(AssertionError.class);
                assertThat(s.servingFingerprint())
                        .as(e.instance() + " serves what it loaded of generation " + old)
                        .isEqualTo(oldPrints.get(i));
                long checked = lab.verifyServing(e, old);
                if (mode == Mode.DIRECT) {
                    assertThat(checked).as("its serving copy, byte for byte").isPositive();
                }
            }
        } finally {
            engines.forEach(ServingEngine::close);
        }
        long after = lab.publish(steps.getAsLong());
        lab.updateAll().requireUpdated();
        lab.verifyAll(after);
    }

    private static long nanos(double seconds) {
        return (long) (seconds * 1e9);
    }

    private static List<ServingEngine.Timing> updateServing(
            List<ServingEngine> engines, long generation) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(engines.size());
        try {
            List<Future<ServingEngine.Timing>> futures = new ArrayList<>();
            for (ServingEngine s : engines) {
                futures.add(pool.submit(() -> s.updateServing(generation, TIMEOUT)));
            }
            List<ServingEngine.Timing> out = new ArrayList<>();
            for (Future<ServingEngine.Timing> f : futures) {
                out.add(f.get());
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
