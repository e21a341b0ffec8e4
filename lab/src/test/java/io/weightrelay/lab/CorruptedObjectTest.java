package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.Mode;
import org.junit.jupiter.api.Test;

/**
 * Fault case 7 on real processes: one byte of a stored object is flipped in its publisher's
 * shared-memory segment after the generation was committed (the directory and the registered
 * checksum are untouched, as after a bad DIMM or a stray write). The update to it must fail before
 * any engine advances, naming the object; the generation is never served, the one before it is
 * active again and rebuilt engines load it byte for byte; the next publish updates everyone.
 */
class CorruptedObjectTest {

    @Test
    void aByteFlippedInAStoredObjectFailsTheUpdateBeforeAnyEngineAdvances() throws Exception {
        try (LabCluster lab = LabCluster.start(LabCluster.Spec.of("tiny", 2, 1, Mode.COMPAT))) {
            try {
                long good = lab.publish(0);
                lab.updateAll().requireUpdated();
                assertThat(lab.verifyAll(good)).isPositive();

                long bad = lab.publish(1);
                StoredFragment victim =
                        lab.manifest().fragments().stream()
                                .filter(f -> f.bytes() > 0)
                                .findFirst()
                                .orElseThrow();
                String key = ObjectKeys.key(lab.manifest().model(), bad, victim.fragment());
                lab.corruptStoredByte(key, victim.bytes() / 2);

                LabCluster.Updates refused = lab.updateAll();
                for (UpdateProgress p : refused.results()) {
                    assertThat(p.getOutcome())
                            .as("%s: %s", p.getUpdateId(), p.getError())
                            .isEqualTo(UpdateOutcome.PAUSED_REBUILD);
                    assertThat(p.getError())
                            .as("the failure names the object")
                            .contains(victim.fragment())
                            .contains("does not match its registered checksum");
                }
                for (RolloutEngine engine : lab.engines()) {
                    InstanceStatus status = engine.status();
                    assertThat(status.getGeneration())
                            .as("%s never advanced to the corrupt generation", engine.instance())
                            .isEqualTo(good);
                    assertThat(status.getPaused()).isTrue();
                }
                Generation corrupt = lab.generation(bad);
                assertThat(corrupt.getCorruptObject()).isEqualTo(victim.fragment());
                assertThat(lab.activeGeneration().getGeneration())
                        .as("the generation before the corrupt one is active again")
                        .isEqualTo(good);

                // Rebuilt engines load the active generation, every byte as the trainer made it.
                lab.reRegisterAll();
                LabCluster.Updates rebuilt = lab.updateAll().requireUpdated();
                assertThat(rebuilt.results()).allMatch(p -> p.getGeneration() == good);
                assertThat(lab.verifyAll(good)).isPositive();

                // The trainer's next publish reaches everyone.
                long next = lab.publish(2);
                assertThat(next).isGreaterThan(bad);
                lab.updateAll().requireUpdated();
                assertThat(lab.verifyAll(next)).isPositive();
            } catch (Exception | AssertionError e) {
                lab.dumpLogs();
                throw e;
            }
        }
    }
}
