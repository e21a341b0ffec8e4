package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlanLoadsTest {

    /**
     * Two rollout nodes each hold the whole tensor: one worker reads it once and pushes a copy to
     * the other node, so the bytes appear once as read, once as pushed on the reader's node and
     * once as received on the other node, and once as served by the trainer.
     */
    @Test
    void aReplicatedTensorIsReadOncePushedOnceAcrossNodes() {
        TensorSpec t = new TensorSpec("w", Shape.of(64, 32), DType.BF16, DType.BF16);
        SourceManifest manifest = Fragmenter.fragment("m", List.of(t));
        long bytes = 64 * 32 * 2;
        List<Worker> workers = new ArrayList<>();
        for (int n = 0; n < 2; n++) {
            workers.add(
                    worker(
                            n,
                            n,
                            n,
                            Mode.DIRECT,
                            List.of(
                                    TargetFragment.dense(
                                            "w",
                                            DType.BF16,
                                            t.shape(),
                                            Shape.of(0, 0),
                                            t.shape(),
                                            "b",
                                            0))));
        }
        TargetPlacement placement = new TargetPlacement(workers);
        Plan plan = Planner.plan(manifest, placement, Topology.uniform(1, 2, 2, 100));

        PlanLoads loads = PlanLoads.of(plan);

        assertThat(loads.nics()).hasSize(2 + 4);
        List<PlanLoads.Nic> trainer = loads.nics().stream().filter(PlanLoads.Nic::trainer).toList();
        List<PlanLoads.Nic> rollout = loads.nics().stream().filter(n -> !n.trainer()).toList();
        assertThat(trainer.stream().mapToLong(PlanLoads.Nic::readBytes).sum()).isEqualTo(bytes);
        assertThat(rollout.stream().mapToLong(PlanLoads.Nic::readBytes).sum()).isEqualTo(bytes);
        assertThat(rollout.stream().mapToLong(PlanLoads.Nic::pushedBytes).sum()).isEqualTo(bytes);
        assertThat(rollout.stream().mapToLong(PlanLoads.Nic::receivedBytes).sum()).isEqualTo(bytes);
        // each worker uses its own NIC of its node (nicFirst = its index), so the reader's NIC
        // carries the read and the push, and the other node's NIC of the same index receives
        PlanLoads.Nic readerNic =
                rollout.stream().filter(n -> n.readBytes() > 0).findFirst().orElseThrow();
        assertThat(readerNic.pushedBytes()).isEqualTo(bytes);
        assertThat(readerNic.receivedBytes()).isZero();
        assertThat(rollout.stream().filter(n -> n.receivedBytes() > 0).toList())
                .singleElement()
                .satisfies(n -> assertThat(n.node()).isNotEqualTo(readerNic.node()));
        assertThat(loads.instances())
                .extracting(PlanLoads.Instance::instance)
                .containsExactly("i0", "i1");
        assertThat(loads.instances().stream().mapToLong(PlanLoads.Instance::readBytes).sum())
                .isEqualTo(bytes);
        assertThat(loads.instances().stream().mapToLong(PlanLoads.Instance::pushedBytes).sum())
                .as("the reader writes its own copy and the other node's")
                .isEqualTo(2 * bytes);
        assertThat(loads.instances())
                .allSatisfy(i -> assertThat(i.receivedBytes()).isEqualTo(bytes));
    }

    /**
     * Compatibility workers, two per node: what the instances are planned to receive is what the
     * placement stores (each image whole, through reads and the delegates' fan-out), every byte
     * received was pushed by a reader or a delegate, and each NIC byte pushed lands on the other
     * node.
     */
    @Test
    void compatInstancesReceiveEveryImageAndTheDelegatesPushTheFanOut() {
        TensorSpec a = new TensorSpec("a", Shape.of(128, 32), DType.BF16, DType.BF16);
        TensorSpec b = new TensorSpec("b", Shape.of(64), DType.BF16, DType.BF16);
        SourceManifest manifest = Fragmenter.fragment("m", List.of(a, b));
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            workers.add(worker(i, i / 2, 0, Mode.COMPAT, List.of()));
        }
        TargetPlacement placement = new TargetPlacement(workers);
        Plan plan = Planner.plan(manifest, placement, Topology.uniform(1, 2, 1, 100));
        Demands demands = Demands.of(manifest, placement);

        PlanLoads loads = PlanLoads.of(plan);

        long received = 0;
        long pushed = 0;
        long read = 0;
        for (PlanLoads.Instance i : loads.instances()) {
            received += i.receivedBytes();
            pushed += i.pushedBytes();
            read += i.readBytes();
        }
        assertThat(received).isEqualTo(demands.targetStoredBytes());
        assertThat(pushed).isEqualTo(received);
        assertThat(read).isEqualTo(demands.storeBytes());
        assertThat(loads.instances())
                .as("each instance receives its own whole image")
                .allSatisfy(
                        i ->
                                assertThat(i.receivedBytes())
                                        .isEqualTo(demands.targetStoredBytes() / 4));
        List<PlanLoads.Nic> rollout = loads.nics().stream().filter(n -> !n.trainer()).toList();
        assertThat(rollout).hasSize(2);
        assertThat(rollout.stream().mapToLong(PlanLoads.Nic::pushedBytes).sum())
                .isEqualTo(rollout.stream().mapToLong(PlanLoads.Nic::receivedBytes).sum())
                .isPositive();
    }

    /**
     * Five parameter-direct instances on one node, one on each of three others, every instance
     * holding every tensor. Whichever node reads a tensor, it crosses the network once to each
     * other node (relays carry it to a node's further instances), so the reads spread evenly and so
     * does the NIC egress. Charging a reader one push per remote instance instead made the crowded
     * node look cheapest to read on: it read 7 of the 16 tensors and pushed 1.75 times the even
     * share, so its NIC's egress, not any node's ingress (the whole model), bounded the update, 31%
     * longer.
     */
    @Test
    void aNodeWithManySameLayoutInstancesIsChargedOncePerRemoteNode() {
        List<TensorSpec> tensors = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
            tensors.add(new TensorSpec("t" + t, Shape.of(64, 32), DType.BF16, DType.BF16));
        }
        SourceManifest manifest = Fragmenter.fragment("m", tensors);
        long tensorBytes = 64 * 32 * 2;
        int[] nodeOf = {0, 0, 0, 0, 0, 1, 2, 3};
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < nodeOf.length; i++) {
            List<TargetFragment> whole = new ArrayList<>();
            for (TensorSpec t : tensors) {
                whole.add(
                        TargetFragment.dense(
                                t.name(),
                                DType.BF16,
                                t.shape(),
                                Shape.of(0, 0),
                                t.shape(),
                                "b",
                                tensors.indexOf(t) * tensorBytes));
            }
            workers.add(worker(i, nodeOf[i], 0, Mode.DIRECT, whole));
        }
        Plan plan =
                Planner.plan(
                        manifest, new TargetPlacement(workers), Topology.uniform(1, 4, 1, 100));

        PlanLoads loads = PlanLoads.of(plan);

        List<PlanLoads.Nic> rollout = loads.nics().stream().filter(n -> !n.trainer()).toList();
        assertThat(rollout).hasSize(4);
        long model = 16 * tensorBytes;
        assertThat(rollout)
                .as("each node reads a quarter of the model and sends it once to each other node")
                .allSatisfy(
                        n -> {
                            assertThat(n.readBytes()).isEqualTo(model / 4);
                            assertThat(n.pushedBytes()).isEqualTo(3 * model / 4);
                            assertThat(n.receivedBytes()).isEqualTo(3 * model / 4);
                        });
    }

    /** Worker {@code index} of instance {@code index}, on one NIC of rollout node {@code node}. */
    private static Worker worker(
            int index, int node, int nic, Mode mode, List<TargetFragment> fragments) {
        return new Worker(
                "w" + index,
                "i" + index,
                Topology.rolloutNodeName(node),
                nic,
                1,
                mode,
                "seg" + index,
                fragments);
    }
}
