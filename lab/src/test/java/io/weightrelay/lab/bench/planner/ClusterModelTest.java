package io.weightrelay.lab.bench.planner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Demands;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.plan.Scenario;
import io.weightrelay.reshard.timing.Traffic;
import io.weightrelay.reshard.topology.Topology;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class ClusterModelTest {
    @Test
    void twoCompatNodesAreBoundByEachNodeReceivingTheWholeModel() {
        // 8 GB model, 2 rollout nodes with one 80 Gb/s (10 GB/s) NIC each, plenty of trainers.
        TensorSpec t = new TensorSpec("w", Shape.of(4096, 1024, 1024), DType.U8, DType.U8);
        SourceManifest m = Fragmenter.fragment("m", List.of(t));
        Topology topology = Topology.uniform(8, 2, 1, 80);
        TargetPlacement placement =
                new TargetPlacement(
                        List.of(
                                new Worker(
                                        "a",
                                        "i0",
                                        Topology.rolloutNodeName(0),
                                        0,
                                        1,
                                        Mode.COMPAT,
                                        "a",
                                        List.of()),
                                new Worker(
                                        "b",
                                        "i1",
                                        Topology.rolloutNodeName(1),
                                        0,
                                        1,
                                        Mode.COMPAT,
                                        "b",
                                        List.of())));
        Demands demands = Demands.of(m, placement);
        double bound =
                ClusterModel.lowerBoundSeconds(
                        demands, topology, PublisherAssignment.assign(m, topology));
        assertThat(bound).isCloseTo(t.bytes() / 10e9, within(1e-9));

        Plan plan = Planner.plan(m, placement, topology);
        Traffic traffic = Traffic.of(plan);
        // Each node reads half and pushes it to the other: in = out = half + half.
        assertThat(traffic.nicIn()[0] + traffic.nicIn()[1]).isEqualTo(2.0 * t.bytes());
        assertThat(traffic.nicOut()[0] + traffic.nicOut()[1]).isEqualTo((double) t.bytes());
        double predicted = ClusterModel.predictedSeconds(plan);
        assertThat(predicted).isGreaterThanOrEqualTo(bound).isLessThan(bound * 1.02);

        // Frame headers take their share of every NIC: the same bytes at 1448 of every 1514.
        assertThat(ClusterModel.predictedSeconds(plan, 1448.0 / 1514))
                .isCloseTo(predicted * 1514 / 1448, within(1e-9));
        assertThat(ClusterModel.predictedSeconds(plan, 1.0)).isEqualTo(predicted);
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> ClusterModel.predictedSeconds(plan, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("(0, 1]");
    }

    @Property(tries = 150)
    void noPlanBeatsTheLowerBound(@ForAll long seed) {
        Scenario s = Scenario.random(seed);
        Plan plan = Planner.plan(s.manifest(), s.placement(), s.topology(), s.options());
        double bound =
                ClusterModel.lowerBoundSeconds(
                        Demands.of(s.manifest(), s.placement()),
                        s.topology(),
                        PublisherAssignment.assign(s.manifest(), s.topology()));
        assertThat(ClusterModel.predictedSeconds(plan)).isGreaterThanOrEqualTo(bound * (1 - 1e-9));
    }
}
