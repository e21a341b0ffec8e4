package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;

/**
 * A random planning problem: small tensors of rank 0 to 3 in mixed dtypes, stored either as dim-0
 * fragments or as arbitrary N-D grids; a topology of a few nodes and NICs; workers in mixed modes
 * whose direct fragments are random (possibly overlapping, possibly repeated) boxes placed in
 * shared buffers with padded, even non-contiguous, strides; small read and batch bounds.
 */
public record Scenario(
        SourceManifest manifest,
        TargetPlacement placement,
        Topology topology,
        Planner.Options options) {

    private static final DType[] DTYPES = {DType.BF16, DType.F32, DType.U8, DType.F16};

    public static Scenario random(long seed) {
        Random r = new Random(seed);
        int tensorCount = 1 + r.nextInt(5);
        List<TensorSpec> tensors = new ArrayList<>();
        for (int i = 0; i < tensorCount; i++) {
            int rank = r.nextInt(4);
            long[] dims = new long[rank];
            for (int d = 0; d < rank; d++) {
                dims[d] = 1 + r.nextInt(6);
            }
            DType dtype = DTYPES[r.nextInt(DTYPES.length)];
            tensors.add(new TensorSpec("layer." + i + ".w", Shape.of(dims), DType.F32, dtype));
        }
        List<StoredFragment> fragments = new ArrayList<>();
        for (int i = 0; i < tensorCount; i++) {
            TensorSpec t = tensors.get(i);
            if (r.nextBoolean() || t.shape().rank() == 0) {
                fragments.addAll(Fragmenter.fragmentsOf(t, 1 + r.nextInt(64)));
            } else {
                fragments.addAll(grid(t, "t" + i, r));
            }
        }
        SourceManifest manifest = new SourceManifest("m" + r.nextInt(3), tensors, fragments);

        int trainers = 1 + r.nextInt(3);
        int rollouts = 1 + r.nextInt(3);
        List<Node> nodes = new ArrayList<>();
        for (int n = 0; n < trainers; n++) {
            nodes.add(
                    new Node("trainer-" + n, Role.TRAINER, 1 + r.nextInt(3), 100 + r.nextInt(300)));
        }
        for (int n = 0; n < rollouts; n++) {
            nodes.add(
                    new Node("rollout-" + n, Role.ROLLOUT, 1 + r.nextInt(3), 100 + r.nextInt(300)));
        }
        Topology topology = new Topology(nodes);

        int workerCount = 1 + r.nextInt(6);
        List<Worker> workers = new ArrayList<>();
        for (int w = 0; w < workerCount; w++) {
            int node = r.nextInt(rollouts);
            int nics = topology.byName().get("rollout-" + node).nics();
            int nicFirst = r.nextInt(nics);
            int nicCount = 1 + r.nextInt(nics - nicFirst);
            Mode mode = r.nextInt(10) < 3 ? Mode.COMPAT : Mode.DIRECT;
            List<TargetFragment> mine = mode == Mode.COMPAT ? List.of() : boxes(tensors, r);
            workers.add(
                    new Worker(
                            "w" + w,
                            "i" + r.nextInt(3),
                            "rollout-" + node,
                            nicFirst,
                            nicCount,
                            mode,
                            "seg-" + w,
                            mine));
        }
        long readMax = 1 + r.nextInt(128);
        Planner.Options options = new Planner.Options(readMax, readMax + r.nextInt(256));
        return new Scenario(manifest, new TargetPlacement(workers), topology, options);
    }

    private static List<StoredFragment> grid(TensorSpec t, String prefix, Random r) {
        int rank = t.shape().rank();
        List<long[]> cuts = new ArrayList<>();
        for (int d = 0; d < rank; d++) {
            TreeSet<Long> points = new TreeSet<>();
            points.add(0L);
            points.add(t.shape().dim(d));
            for (int k = 0; k < r.nextInt(3); k++) {
                points.add((long) r.nextInt((int) t.shape().dim(d) + 1));
            }
            cuts.add(points.stream().mapToLong(Long::longValue).toArray());
        }
        return GridFragments.of(t, prefix, cuts.toArray(long[][]::new));
    }

    private static List<TargetFragment> boxes(List<TensorSpec> tensors, Random r) {
        Map<String, Long> cursor = new HashMap<>();
        List<TargetFragment> out = new ArrayList<>();
        for (TensorSpec t : tensors) {
            int count = r.nextInt(3);
            for (int k = 0; k < count; k++) {
                int rank = t.shape().rank();
                long[] lo = new long[rank];
                long[] ext = new long[rank];
                for (int d = 0; d < rank; d++) {
                    long dim = t.shape().dim(d);
                    lo[d] = r.nextInt((int) dim);
                    ext[d] = 1 + r.nextInt((int) (dim - lo[d]));
                }
                int elt = t.rolloutDtype().bytes();
                long[] strides = new long[rank];
                long stride = elt * (r.nextInt(4) == 0 ? 2L : 1L);
                for (int d = rank - 1; d >= 0; d--) {
                    strides[d] = stride;
                    stride = stride * ext[d] + (r.nextInt(3) == 0 ? r.nextInt(3) * elt : 0);
                }
                long footprint = elt;
                for (int d = 0; d < rank; d++) {
                    footprint += (ext[d] - 1) * strides[d];
                }
                String buffer = "buf" + r.nextInt(2);
                long offset = cursor.getOrDefault(buffer, 0L) + r.nextInt(3);
                cursor.put(buffer, offset + footprint);
                out.add(
                        new TargetFragment(
                                t.name(),
                                t.rolloutDtype(),
                                t.shape(),
                                Shape.of(lo),
                                Shape.of(ext),
                                buffer,
                                offset,
                                Shape.of(strides)));
            }
        }
        return out;
    }
}
