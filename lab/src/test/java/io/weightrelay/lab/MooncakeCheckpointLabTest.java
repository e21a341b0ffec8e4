package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.SegmentOwner;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.lab.faults.MooncakeAgentKills;
import io.weightrelay.reshard.placement.Mode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
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
 *
 * <p>Both tests need the same lab (tiny, two instances x tp 1, compat), so they take turns on one
 * ({@link SharedTestLab}: one Mooncake lab start instead of two, each about a third of this class's
 * time on two cores), each on trainer steps nobody published there yet. The agent kill goes first:
 * it proves the lab usable again (a publish, an update verified and a save that finds both owners)
 * before it returns, and the full restart after it starts every service afresh anyway. A test that
 * fails stops the lab, so the next one starts a fresh one instead of inheriting a broken state.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MooncakeCheckpointLabTest {

    private static final LabCluster.Spec SPEC = LabCluster.Spec.of("tiny", 2, 1, Mode.COMPAT);

    private static ServicesOnMooncake mooncake;

    @RegisterExtension static final SharedTestLab shared = new SharedTestLab();

    @BeforeAll
    static void startMaster() throws Exception {
        mooncake = ServicesOnMooncake.start();
    }

    @AfterAll
    static void stopMaster() throws Exception {
        shared.close();
        if (mooncake != null) {
            mooncake.close();
        }
    }

    @Test
    @Order(2)
    void aSavedGenerationSurvivesAFullRestartOnMooncake(@TempDir Path dir) throws Exception {
        CheckpointRestartLabTest.saveRestartRestore(shared.lab(SPEC), dir, shared::nextStep);
    }

    /**
     * A publisher's agent killed and started again mounts a new segment under a new store endpoint:
     * the publisher registers that endpoint at its next beat (not a plain renewal), so control-api
     * finds the objects published into the new segment and a save of the next generation calls both
     * owners. With the endpoint of the dead agent still registered, the new objects would map to no
     * owner and the save would be refused ({@code objects-not-stored}).
     */
    @Test
    @Order(1)
    void aPublishersNewAgentRegistersItsStoreEndpointAndTheNextSaveFindsItsObjects(
            @TempDir Path dir) throws Exception {
        LabCluster lab = shared.lab(SPEC);
        long g1 = lab.publish(shared.nextStep());
        lab.updateAll().requireUpdated();
        Map<String, String> before = storeEndpoints(lab);
        assertThat(before).as("every owner registered its store endpoint").hasSize(2);
        assertThat(before.values()).doesNotContainNull();
        MooncakeAgentKills.killAgentOf(lab.faults().publisherPid(0));
        lab.awaitGenerationState(g1, GenerationState.LOST, Duration.ofSeconds(60));
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        Map<String, String> after = storeEndpoints(lab);
        while (after.equals(before) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            after = storeEndpoints(lab);
        }
        Map<String, String> changed = new TreeMap<>(after);
        changed.entrySet().removeIf(e -> e.getValue().equals(before.get(e.getKey())));
        assertThat(changed).as("the owner with a new agent registered again").hasSize(1);
        assertThat(changed.values()).doesNotContainNull();

        lab.reRegisterAll();
        long g2 = lab.publish(shared.nextStep());
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(g2)).isPositive();
        CheckpointReport report = lab.checkpoint(g2, dir);
        assertThat(report.getOwners()).hasSize(2);
        assertThat(report.getOwners())
                .allSatisfy(o -> assertThat(o.getError()).as(o.getSegment()).isNull());
        assertThat(report.getBytes()).isEqualTo(lab.manifest().totalBytes());
    }

    /** Each live owner's registered store endpoint, by segment. */
    private static Map<String, String> storeEndpoints(LabCluster lab) {
        Map<String, String> out = new TreeMap<>();
        for (SegmentOwner s :
                new RegistryApi(lab.faults().controlApi(0).getApiClient()).listSegments()) {
            if (Boolean.TRUE.equals(s.getAlive())) {
                out.put(s.getSegment(), s.getStoreEndpoint());
            }
        }
        return out;
    }
}
