package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Demands;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The lab on the real Mooncake ({@code relay.dataplane.engine=mooncake}): the pinned wheel's {@code
 * mooncake_master} ({@link MooncakeLab}) and control-api, two publishers and four loaders as
 * separate JVMs, each running its Mooncake agent. Publishers stage and put each object into their
 * agent's mounted segment; loaders read it with {@code get_into_ranges} into their receive segments
 * and redistribute with Mooncake Transfer Engine writes. Two generations are published and updated
 * in each mode, every received byte checked against the trainer's, and the store read exactly once
 * per byte the placement needs (the loaders' Mooncake byte counters), so the second update also
 * runs after control-api retired the first generation's objects.
 */
class MooncakeLabTest {

    private static MooncakeLab mooncake;
    private static String jvmOptions;

    @RegisterExtension final RunningLabs labs = new RunningLabs();

    @BeforeAll
    static void startMaster() throws Exception {
        mooncake = MooncakeLab.start(Path.of("../python/src"));
        jvmOptions = System.getProperty(ServiceProcess.JVM_OPTIONS_PROPERTY, "");
        System.setProperty(
                ServiceProcess.JVM_OPTIONS_PROPERTY,
                (jvmOptions + " " + String.join(" ", mooncake.serviceJvmOptions())).strip());
    }

    @AfterAll
    static void stopMaster() throws Exception {
        System.setProperty(ServiceProcess.JVM_OPTIONS_PROPERTY, jvmOptions);
        if (mooncake != null) {
            mooncake.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Mode.class)
    void updatesOnMooncakeDeliverEveryByteReadingTheStoreOncePerNeededByte(Mode mode)
            throws Exception {
        LabCluster lab = labs.add(LabCluster.start(LabCluster.Spec.of("tiny", 4, 2, mode)));
        Demands demands = Demands.of(lab.manifest(), lab.placement());
        for (int step = 0; step < 2; step++) {
            long generation = lab.publish(step);
            LabCluster.Updates update = lab.updateAll().requireUpdated();
            long verified = lab.verifyAll(generation);
            assertThat(verified).as("bytes checked against the trainer's").isPositive();
            Delivery.exactAndSinglePull(update, demands);
            System.out.printf(
                    "mooncake %s generation %d: received %d, verified %d, store read %d of %d"
                            + " needed (%.1f s)%n",
                    mode,
                    generation,
                    update.bytesReceived(),
                    verified,
                    update.storeBytesRead(),
                    demands.storeBytes(),
                    update.seconds());
        }
    }

    /**
     * Issue 47: a loader killed with SIGKILL comes back on Mooncake. Its successor takes over the
     * receive segments' names the dead one left in the directory (refused as another engine's
     * before), loads the active generation alone from the store with no republish, and the next
     * update of every instance, the restarted one included, delivers every byte.
     */
    @ParameterizedTest
    @EnumSource(Mode.class)
    void aKilledLoaderRestartsLoadsTheActiveGenerationAndTheNextUpdateSucceeds(Mode mode)
            throws Exception {
        LabCluster lab = labs.add(LabCluster.start(LabCluster.Spec.of("tiny", 4, 2, mode)));
        long first = lab.publish(0);
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(first)).isPositive();

        RolloutEngine restarted = lab.restartInstance(0);
        lab.update(List.of(restarted)).requireUpdated();
        assertThat(lab.verify(restarted, first))
                .as("the restarted instance loads the active generation with no republish")
                .isPositive();

        lab.reRegisterAll();
        long second = lab.publish(1);
        LabCluster.Updates update = lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(second)).as("bytes checked against the trainer's").isPositive();
        Delivery.exactAndSinglePull(update, Demands.of(lab.manifest(), lab.placement()));
    }
}
