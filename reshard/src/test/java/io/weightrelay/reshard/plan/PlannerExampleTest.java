package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.timing.Traffic;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

class PlannerExampleTest {
    private static final List<TensorLayout> TINY = ModelCatalog.layout("tiny");
    private static final SourceManifest MANIFEST =
            Fragmenter.fragment("tiny", TINY.stream().map(TensorLayout::spec).toList(), 256 << 10);
    private static final Topology TOPOLOGY = Topology.uniform(2, 4, 2, 400);

    private static Plan plan(TargetPlacement placement) {
        return Planner.plan(MANIFEST, placement, TOPOLOGY, new Planner.Options(64 << 10, 1 << 20));
    }

    @Test
    void compatibilityModeSendsEveryByteOncePerRemoteNodeAndFansOutLocally() {
        TargetPlacement placement = Placements.of(TINY, 4, 4, 2, 2, Mode.COMPAT, 2);
        Plan plan = plan(placement);

        ValidationReport report = PlanValidator.validate(plan, MANIFEST, placement);
        assertThat(report.problems()).isEmpty();
        assertThat(report.readBytes()).isEqualTo(MANIFEST.totalBytes());
        assertThat(report.deliveredBytes()).isEqualTo(8 * MANIFEST.totalBytes());
        for (int i = 0; i < plan.readCount(); i++) {
            int readerNode = plan.workerNode(plan.readReader(i));
            long remote = 0;
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                assertThat(plan.writeFlags(x) & Plan.FANOUT).isEqualTo(Plan.FANOUT);
                if (plan.workerNode(plan.writeDst(x)) != readerNode) {
                    remote++;
                    assertThat(plan.writeFlags(x) & Plan.NOTIFY).isEqualTo(Plan.NOTIFY);
                }
            }
            assertThat(remote).isEqualTo(3);
            assertThat(plan.writeEnd(i) - plan.writeFirst(i)).isEqualTo(4);
        }
        assertThat(ByteWorld.run(plan, MANIFEST, placement, 7).firstMismatch(MANIFEST, placement))
                .isNull();
        // no relayed write: any loader can run these slices
        for (String instance : placement.instances()) {
            assertThat(new ByteSource(Slice.of(plan, instance).encode()).string())
                    .isEqualTo("wr.slice.v1");
        }
    }

    @Test
    void directModeDeliversExactlyWhatThePlacementStores() {
        TargetPlacement placement = Placements.of(TINY, 4, 4, 2, 2, Mode.DIRECT, 2);
        Plan plan = plan(placement);
        long stored = 0;
        for (Worker w : placement.workers()) {
            for (TargetFragment f : w.fragments()) {
                stored += f.bytes();
            }
        }

        ValidationReport report = PlanValidator.validate(plan, MANIFEST, placement);
        assertThat(report.problems()).isEmpty();
        assertThat(report.deliveredBytes()).isEqualTo(stored);
        assertThat(report.readBytes()).isEqualTo(MANIFEST.totalBytes());
        // Four data-parallel replicas: delivery is four models, not (workers - 1) of them.
        assertThat(stored).isBetween(4 * MANIFEST.totalBytes(), 5 * MANIFEST.totalBytes());
        assertThat(ByteWorld.run(plan, MANIFEST, placement, 11).firstMismatch(MANIFEST, placement))
                .isNull();
        assertThat(
                        new Traffic(new double[0], new double[0], new double[0], new double[0])
                                .nicBalance())
                .isEqualTo(1.0);
        assertThat(Traffic.of(plan).nicBalance()).isLessThan(1.5);
    }

    /** The lab's shape: two rollout nodes, two TP-2 instances on each, parameter-direct. */
    private static final TargetPlacement LAB_DIRECT =
            Placements.of(TINY, 2, 4, 2, 1, Mode.DIRECT, 1);

    private static Plan labPlan() {
        return Planner.plan(
                MANIFEST,
                LAB_DIRECT,
                Topology.uniform(2, 2, 1, 100),
                new Planner.Options(64 << 10, 1 << 20));
    }

    @Test
    void directModeSendsSameLayoutShardsToARemoteNodeOnceAndRelaysThemThere() {
        TargetPlacement placement = LAB_DIRECT;
        Plan plan = labPlan();

        ValidationReport report = PlanValidator.validate(plan, MANIFEST, placement);
        assertThat(report.problems()).isEmpty();
        assertThat(report.readBytes()).isEqualTo(MANIFEST.totalBytes());
        int relayed = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            int readerNode = plan.workerNode(plan.readReader(i));
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                int dst = plan.writeDst(x);
                if ((plan.writeFlags(x) & Plan.RELAYED) != 0) {
                    relayed++;
                    // the delegate is the write before it, or that one's delegate
                    int d = x - 1;
                    while ((plan.writeFlags(d) & Plan.RELAYED) != 0) {
                        d--;
                    }
                    assertThat(plan.writeFlags(d)).isEqualTo(Plan.FANOUT | Plan.NOTIFY);
                    assertThat(plan.workerNode(plan.writeDst(d))).isEqualTo(plan.workerNode(dst));
                    assertThat(plan.workerNode(dst)).isNotEqualTo(readerNode);
                    // another instance's worker, or a rank of the delegate's that replicates it
                    assertThat(dst).isNotEqualTo(plan.writeDst(d));
                }
            }
        }
        assertThat(relayed).isPositive();
        // Each node takes in every stored byte once: read there, or pushed there once.
        double[] in = Traffic.of(plan).nicIn();
        assertThat(in[0] + in[1]).isEqualTo(2.0 * MANIFEST.totalBytes());
        assertThat(PlanLoads.of(plan).nics().stream().mapToLong(PlanLoads.Nic::receivedBytes).sum())
                .isEqualTo(MANIFEST.totalBytes());
        // Every loader's slice passes its own check, the relays' copiers included. A slice with
        // relayed writes is named so that a loader that predates relays refuses it.
        Map<String, byte[]> encoded = Slice.encoded(plan, new TreeSet<>(placement.instances()));
        for (String instance : placement.instances()) {
            byte[] bytes = Slice.of(plan, instance).encode();
            assertThat(encoded.get(instance)).isEqualTo(bytes);
            assertThat(new ByteSource(bytes).string()).isEqualTo("wr.slice.v2");
            Slice slice = Slice.decode(bytes);
            List<Worker> mine =
                    placement.workers().stream()
                            .filter(w -> w.instance().equals(instance))
                            .toList();
            assertThat(SliceValidator.validate(slice, mine, null).problems())
                    .as(instance)
                    .isEmpty();
        }
        assertThat(ByteWorld.run(plan, MANIFEST, placement, 13).firstMismatch(MANIFEST, placement))
                .isNull();
    }

    @Test
    void theValidatorRefusesRelaysThatDoNotFollowTheirDelegate() {
        TargetPlacement placement = LAB_DIRECT;
        Plan plan = labPlan();
        int relayed = -1;
        for (int x = 0; x < plan.writeCount() && relayed < 0; x++) {
            if ((plan.writeFlags(x) & Plan.RELAYED) != 0) {
                relayed = x;
            }
        }
        int delegate = relayed - 1;
        assertThat(plan.writeFlags(delegate)).isEqualTo(Plan.FANOUT | Plan.NOTIFY);

        // The delegate loses its fan-out flag: the relayed write now follows a plain write.
        byte[] flags = plan.writes.flags().clone();
        flags[delegate] = 0;
        assertThat(PlanValidator.validate(withFlags(plan, flags), MANIFEST, placement).problems())
                .anyMatch(p -> p.contains("is relayed but follows no parameter-direct fan-out"));

        // The relayed write is sent instead: the delegate relays nothing.
        flags = plan.writes.flags().clone();
        for (int x = relayed; x < plan.writeCount() && (flags[x] & Plan.RELAYED) != 0; x++) {
            flags[x] = 0;
        }
        assertThat(PlanValidator.validate(withFlags(plan, flags), MANIFEST, placement).problems())
                .anyMatch(p -> p.contains("has the fan-out flag but relays nothing"));
    }

    /** The same plan with other write flags. */
    private static Plan withFlags(Plan plan, byte[] flags) {
        Columns.Writes w = plan.writes;
        return new Plan(
                plan.header,
                plan.nodes,
                plan.trainers,
                plan.workers,
                plan.tables.buffers(),
                plan.tensorNames,
                plan.objects,
                plan.reads,
                new Columns.Writes(
                        w.dst(),
                        w.buffer(),
                        flags,
                        w.src(),
                        w.dstOffset(),
                        w.length(),
                        w.loopFirst(),
                        w.loops()));
    }

    @Test
    void rowParallelShardsBecomeOneRunWithAnOuterLoopNotOneRecordPerRow() {
        TensorSpec t = new TensorSpec("o_proj.weight", Shape.of(64, 32), DType.BF16, DType.BF16);
        SourceManifest manifest = Fragmenter.fragment("m", List.of(t));
        List<Worker> workers = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            workers.add(
                    new Worker(
                            "w" + r,
                            "i0",
                            Topology.rolloutNodeName(0),
                            r,
                            1,
                            Mode.DIRECT,
                            "w" + r,
                            List.of(
                                    TargetFragment.dense(
                                            t.name(),
                                            DType.BF16,
                                            t.shape(),
                                            Shape.of(0, 16L * r),
                                            Shape.of(64, 16),
                                            "o_proj",
                                            0))));
        }
        TargetPlacement placement = new TargetPlacement(workers);
        Plan plan = Planner.plan(manifest, placement, Topology.uniform(1, 1, 2, 100));

        assertThat(plan.readCount()).isEqualTo(1);
        assertThat(plan.writeCount()).isEqualTo(2);
        for (int x = 0; x < 2; x++) {
            assertThat(plan.writeLength(x)).isEqualTo(32);
            assertThat(plan.loopEnd(x) - plan.loopFirst(x)).isEqualTo(1);
            assertThat(plan.loopCount(plan.loopFirst(x))).isEqualTo(64);
            assertThat(plan.loopSrcStride(plan.loopFirst(x))).isEqualTo(64);
            assertThat(plan.loopDstStride(plan.loopFirst(x))).isEqualTo(32);
        }
        assertThat(PlanValidator.validate(plan, manifest, placement).problems()).isEmpty();
    }

    @Test
    void bytesNobodyNeedsAreNeverRead() {
        TensorSpec t = new TensorSpec("w", Shape.of(8, 4), DType.F32, DType.F32);
        SourceManifest manifest = Fragmenter.fragment("m", List.of(t));
        Worker w =
                soleWorker(
                        TargetFragment.dense(
                                "w", DType.F32, t.shape(), Shape.of(2, 1), Shape.of(3, 2), "b", 0));
        TargetPlacement placement = new TargetPlacement(List.of(w));
        Plan plan = Planner.plan(manifest, placement, Topology.uniform(1, 1, 1, 100));

        assertThat(plan.readCount()).isEqualTo(1);
        long read = plan.readBytes(0);
        assertThat(read).isEqualTo(3 * 2 * 4);
        assertThat(plan.rangeEnd(0) - plan.rangeFirst(0)).isEqualTo(3);
        assertThat(PlanValidator.validate(plan, manifest, placement).problems()).isEmpty();
    }

    @Test
    void mismatchedDtypeFailsClosedNamingTheTensor() {
        TensorLayout first = TINY.get(0);
        Worker w = directWorker(first, DType.F32, first.spec().shape());
        assertPlanningFailsNaming(w, "tensor " + first.spec().name(), "dtype");
    }

    @Test
    void mismatchedShapeFailsClosedNamingTheTensor() {
        TensorLayout first = TINY.get(0);
        Shape wrong = first.spec().shape().with(0, first.spec().shape().dim(0) + 1);
        Worker w = directWorker(first, first.spec().rolloutDtype(), wrong);
        assertPlanningFailsNaming(w, "tensor " + first.spec().name(), "shape");
    }

    @Test
    void unknownTensorFailsClosedNamingIt() {
        Worker w =
                soleWorker(
                        TargetFragment.dense(
                                "no.such.tensor",
                                DType.BF16,
                                Shape.of(2),
                                Shape.of(0),
                                Shape.of(2),
                                "b",
                                0));
        assertPlanningFailsNaming(w, "tensor no.such.tensor");
    }

    @Test
    void aWorkerOnAnUnknownNodeFailsClosed() {
        Worker w = new Worker("w0", "i0", "elsewhere", 0, 1, Mode.COMPAT, "w0", List.of());
        assertPlanningFailsNaming(w, "elsewhere");
    }

    @Test
    void validationRejectsAPlanForAnotherPlacement() {
        TargetPlacement placement = Placements.of(TINY, 4, 4, 2, 2, Mode.DIRECT, 2);
        Plan plan = plan(placement);
        List<Worker> fewer = new ArrayList<>(placement.workers());
        Worker first = fewer.get(0);
        fewer.set(0, first.withFragments(first.fragments().subList(1, first.fragments().size())));
        TargetPlacement other = new TargetPlacement(fewer);

        ValidationReport report = PlanValidator.validate(plan, MANIFEST, other);
        assertThat(report.valid()).isFalse();
        assertThatThrownBy(report::orThrow).isInstanceOf(PlanValidationException.class);
    }

    @Test
    void slicesCutTogetherEqualSlicesCutOneByOne() {
        TargetPlacement placement = Placements.of(TINY, 4, 4, 2, 2, Mode.COMPAT, 2);
        Plan plan = plan(placement);
        java.util.Set<String> some =
                new java.util.LinkedHashSet<>(placement.instances().subList(1, 3));
        Map<String, Slice> together = Slice.of(plan, some);
        assertThat(together.keySet()).containsExactlyInAnyOrderElementsOf(some);
        for (String instance : some) {
            assertThat(together.get(instance).encode())
                    .isEqualTo(Slice.of(plan, instance).encode());
        }
        assertThatThrownBy(() -> Slice.of(plan, java.util.Set.of("no-such-instance")))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aSliceFailsValidationAgainstARegistrationItWasNotMadeFor() {
        TargetPlacement placement = Placements.of(TINY, 4, 4, 2, 2, Mode.DIRECT, 2);
        Plan plan = plan(placement);
        String instance = placement.instances().get(0);
        Slice slice = Slice.of(plan, instance);
        List<Worker> mine =
                placement.workers().stream().filter(w -> w.instance().equals(instance)).toList();
        assertThat(SliceValidator.validate(slice, mine, null).problems()).isEmpty();

        Worker first = mine.get(0);
        List<TargetFragment> moved = new ArrayList<>(first.fragments());
        TargetFragment f = moved.get(0);
        moved.set(
                0,
                new TargetFragment(
                        f.tensor(),
                        f.dtype(),
                        f.tensorShape(),
                        f.offset(),
                        f.shape(),
                        f.buffer(),
                        f.bufferOffset() + 2,
                        f.strides()));
        List<Worker> changed = new ArrayList<>(mine);
        changed.set(0, first.withFragments(moved));
        assertThat(SliceValidator.validate(slice, changed, null).problems())
                .anyMatch(p -> p.contains(first.id()));
    }

    @Test
    void slicesAreSmallerThanThePlanAndRoundTrip() {
        TargetPlacement placement = Placements.of(TINY, 4, 4, 2, 2, Mode.COMPAT, 2);
        Plan plan = plan(placement);
        byte[] whole = plan.encode();
        assertThat(Slice.all(plan).keySet()).containsExactlyElementsOf(placement.instances());
        for (String instance : placement.instances()) {
            byte[] bytes = Slice.of(plan, instance).encode();
            assertThat(Slice.all(plan).get(instance).encode()).isEqualTo(bytes);
            assertThat(bytes.length).isLessThan(whole.length);
            assertThat(Slice.decode(bytes).encode()).isEqualTo(bytes);
            Slice.Batch batch = Slice.decode(bytes).batch(0);
            assertThat(batch.index()).isZero();
            for (Slice.ReadOp read : batch.reads()) {
                assertThat(read.key(42)).isEqualTo("tiny/42/" + read.fragment());
                // Compatibility: one write per node (4 nodes), the local one a scatter or a
                // same-node push to a delegate, every one fanned out.
                assertThat(read.writes()).hasSize(4).allMatch(Slice.WriteOp::fanout);
                assertThat(read.writes().stream().filter(Slice.WriteOp::remote)).hasSize(3);
            }
        }
        assertThat(SafetensorsLayout.of(MANIFEST).imageBytes())
                .isGreaterThan(MANIFEST.totalBytes());
    }

    @Test
    void truncatedOrCorruptPlanBytesFailClosed() {
        byte[] bytes = plan(Placements.of(TINY, 4, 4, 2, 2, Mode.DIRECT, 2)).encode();
        assertThatThrownBy(() -> Plan.decode(Arrays.copyOf(bytes, bytes.length - 1)))
                .isInstanceOf(CodecException.class);
        byte[] trailing = Arrays.copyOf(bytes, bytes.length + 1);
        assertThatThrownBy(() -> Plan.decode(trailing)).isInstanceOf(CodecException.class);
        assertThatThrownBy(() -> Slice.decode(bytes)).isInstanceOf(CodecException.class);
    }

    /** Planning a placement of the one worker {@code w} fails, the message naming every part. */
    private static void assertPlanningFailsNaming(Worker w, String... messageParts) {
        assertThatThrownBy(() -> plan(new TargetPlacement(List.of(w))))
                .isInstanceOf(PlanningException.class)
                .hasMessageContainingAll(messageParts);
    }

    private static Worker directWorker(TensorLayout t, DType dtype, Shape shape) {
        return soleWorker(
                TargetFragment.dense(
                        t.spec().name(),
                        dtype,
                        shape,
                        Shape.zeros(shape.rank()),
                        Shape.of(1).rank() == shape.rank() ? Shape.of(1) : shape.with(0, 1),
                        "b",
                        0));
    }

    /** The one direct worker of a one-node placement, with one fragment. */
    private static Worker soleWorker(TargetFragment fragment) {
        return new Worker(
                "w0",
                "i0",
                Topology.rolloutNodeName(0),
                0,
                1,
                Mode.DIRECT,
                "w0",
                List.of(fragment));
    }
}
