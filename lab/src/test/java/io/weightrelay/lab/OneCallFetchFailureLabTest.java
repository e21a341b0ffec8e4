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
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 51: a one-call update (the engine drained before it called) whose fetch fails after the
 * prepared barrier ends by what the fetch wrote, not by how the update installs. One stored object
 * of the new generation is corrupt, so every loader receives all of it and the group's checksum
 * proof fails at the applied barrier: the received bytes are no longer the old generation's. Compat
 * workers received into their image, apart from the engine's weights, and staged direct workers
 * into the loader's copy: every engine ends RESUMED_OLD, not paused, still serving the old
 * generation byte for byte (a staged worker's serving copy checked against the generator), the
 * group's session ends RESUMED_OLD, and the next update needs no rebuild. In-place direct workers
 * received into what their engine serves from: PAUSED_REBUILD, and a rebuild before the next.
 */
class OneCallFetchFailureLabTest {

    /** How an instance's workers take a new generation. */
    enum Receiving {
        COMPAT(Mode.COMPAT, null),
        STAGED(Mode.DIRECT, DirectInstall.STAGED),
        IN_PLACE(Mode.DIRECT, null);

        final Mode mode;

        /** How its direct workers install, where not the default (in place). */
        final DirectInstall install;

        Receiving(Mode mode, DirectInstall install) {
            this.mode = mode;
            this.install = install;
        }

        boolean fetchWritesServingWeights() {
            return this == IN_PLACE;
        }
    }

    @RegisterExtension final RunningLabs labs = new RunningLabs();

    @ParameterizedTest
    @EnumSource(Receiving.class)
    void aOneCallFetchThatFailsEndsByWhatItWrote(Receiving receiving) throws Exception {
        LabCluster lab =
                labs.add(LabCluster.start(LabCluster.Spec.of("tiny", 2, 2, receiving.mode)));
        if (receiving.install != null) {
            lab.directInstall(receiving.install);
        }
        long old = lab.publish(0);
        lab.updateAll().requireUpdated();
        lab.verifyAll(old);

        List<ServingEngine> engines = new ArrayList<>();
        List<ServingEngine.Fingerprint> oldPrints = new ArrayList<>();
        try {
            for (RolloutEngine e : lab.engines()) {
                ServingEngine s = ServingEngine.of(e);
                engines.add(s);
                s.load(); // the engine's own load at UPDATED (a compat worker copies its image)
                oldPrints.add(s.servingFingerprint());
            }

            long bad = lab.publish(1);
            StoredFragment victim = lab.corruptAnObject(bad);
            UpdateOutcome expected =
                    receiving.fetchWritesServingWeights()
                            ? UpdateOutcome.PAUSED_REBUILD
                            : UpdateOutcome.RESUMED_OLD;
            for (UpdateProgress p : lab.updateAll().results()) {
                assertThat(p.getOutcome()).as(p.getError()).isEqualTo(expected);
                assertThat(p.getError()).contains(victim.fragment());
            }
            assertThat(lab.session(bad, "lab").getState())
                    .isEqualTo(
                            receiving.fetchWritesServingWeights()
                                    ? SessionState.PAUSED_REBUILD
                                    : SessionState.RESUMED_OLD);

            for (int i = 0; i < engines.size(); i++) {
                ServingEngine s = engines.get(i);
                RolloutEngine e = s.engine();
                InstanceStatus status = e.status();
                assertThat(status.getGeneration()).isEqualTo(old);
                assertThatThrownBy(() -> lab.verify(e, old))
                        .as(e.instance() + ": the fetch wrote its receive buffers")
                        .isInstanceOf(AssertionError.class);
                if (receiving.fetchWritesServingWeights()) {
                    assertThat(status.getPaused()).isTrue();
                    continue;
                }
                assertThat(status.getPaused()).isFalse();
                assertThat(s.servingFingerprint())
                        .as(e.instance() + " serves what it loaded of generation " + old)
                        .isEqualTo(oldPrints.get(i));
                long checked = lab.verifyServing(e, old);
                if (receiving == Receiving.STAGED) {
                    assertThat(checked).as("its serving copy, byte for byte").isPositive();
                }
            }
        } finally {
            engines.forEach(ServingEngine::close);
        }

        if (receiving.fetchWritesServingWeights()) {
            lab.reRegisterAll();
        }
        long next = lab.publish(2);
        lab.updateAll().requireUpdated();
        lab.verifyAll(next);
    }
}
