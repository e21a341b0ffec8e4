package io.weightrelay.lab;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 47: checkpoints on the real Mooncake ({@code relay.dataplane.engine=mooncake}), the story
 * of {@link CheckpointRestartLabTest} on a {@link MooncakeLab}. The save finds each object's owner
 * by the store endpoint Mooncake names its replica by (registered by each publisher with
 * control-api) and each owner reads what its agent holds through its staging; the full restart
 * stops every service, so every agent's mounted segment is gone and the master forgets the objects;
 * the restore puts them back through the fresh publishers' agents, and a rollout engine loads the
 * restored generation with every byte verified.
 */
class MooncakeCheckpointLabTest {

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

    @Test
    void aSavedGenerationSurvivesAFullRestartOnMooncake(@TempDir Path dir) throws Exception {
        LabCluster lab = labs.add(LabCluster.start(LabCluster.Spec.of("tiny", 2, 1, Mode.COMPAT)));
        CheckpointRestartLabTest.saveRestartRestore(lab, dir);
    }
}
