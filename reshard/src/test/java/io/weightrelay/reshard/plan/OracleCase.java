package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.DType;
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
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

/**
 * One random deployment that Mooncake's #3187 contracts can express, in both vocabularies: ours (a
 * source manifest, a parameter-direct placement, a topology) and #3187's (tensor descriptors with
 * their parallel axes, stored fragments, ranks with their (dp, pp, tp, ep) coordinates, placement
 * fragments), the latter as JSON for {@code src/test/python/plan_with_mooncake_3441.py}.
 *
 * <p>What is drawn: TP 1, 2 or 4 with tensors split on dim 0 or dim 1 in uneven pieces, or
 * replicated; with experts, EP equal to TP (each rank's {@code ep} coordinate is its {@code tp}),
 * whole experts split on the expert dim; 1 or 2 pipeline stages (each tensor owned by one stage); 1
 * or 2 data-parallel replicas (one engine instance each); a tied embedding pair (two tensors, the
 * embedding on the first stage and the head on the last, stored and held alike); tensors stored as
 * dim-0 pieces or N-D grids, one object per stored fragment (our model's store layout); receive
 * boxes packed in one buffer per rank with small gaps; and small read and batch bounds.
 */
record OracleCase(
        long seed,
        int tp,
        int pp,
        int ep,
        int dp,
        SourceManifest manifest,
        TargetPlacement placement,
        Topology topology,
        Planner.Options options,
        String json) {

    private static final DType[] DTYPES = {DType.BF16, DType.F32, DType.U8, DType.F16};

    /** The #3187 object key of a stored fragment: under its manifest group's payload prefix. */
    static String objectKey(String fragment) {
        return "oracle/payload/" + fragment;
    }

    /** How a tensor is laid out over the ranks. */
    private enum Kind {
        SPLIT_DIM0,
        SPLIT_DIM1,
        REPLICATED,
        EXPERTS
    }

    private record Tensor(
            TensorSpec spec, Kind kind, int stage, List<String> aliases, long[][] cuts) {}

    static OracleCase random(long seed) {
        Random r = new Random(seed);
        int tp = new int[] {1, 2, 4}[r.nextInt(3)];
        int pp = r.nextInt(3) == 0 ? 2 : 1;
        int dp = r.nextInt(3) == 0 ? 2 : 1;
        boolean moe = tp > 1 && r.nextBoolean();
        int ep = moe ? tp : 1;

        List<Tensor> tensors = new ArrayList<>();
        if (r.nextInt(3) == 0) {
            long[] dims = {1 + r.nextInt(8), 1 + r.nextInt(4)};
            Kind kind = dims[0] >= tp && r.nextBoolean() ? Kind.SPLIT_DIM0 : Kind.REPLICATED;
            DType dtype = DTYPES[r.nextInt(DTYPES.length)];
            long[][] cuts = kind == Kind.SPLIT_DIM0 ? new long[][] {cuts(dims[0], tp, r)} : null;
            List<String> tied = List.of("embed", "lm_head");
            tensors.add(new Tensor(spec("embed", dims, dtype), kind, 0, tied, cuts));
            tensors.add(new Tensor(spec("lm_head", dims, dtype), kind, pp - 1, tied, cuts));
        }
        int count = 1 + r.nextInt(5);
        for (int i = 0; i < count; i++) {
            Kind kind = Kind.values()[r.nextInt(moe ? 4 : 3)];
            DType dtype = DTYPES[r.nextInt(DTYPES.length)];
            int stage = r.nextInt(pp);
            String name = "layers." + i + ".w";
            long[] dims;
            long[][] cuts = null;
            switch (kind) {
                case SPLIT_DIM0 -> {
                    dims = new long[1 + r.nextInt(3)];
                    fill(dims, r);
                    dims[0] = tp + r.nextInt(2 * tp + 1);
                    cuts = new long[][] {cuts(dims[0], tp, r)};
                }
                case SPLIT_DIM1 -> {
                    dims = new long[2 + r.nextInt(2)];
                    fill(dims, r);
                    dims[1] = tp + r.nextInt(2 * tp + 1);
                    cuts = new long[][] {null, cuts(dims[1], tp, r)};
                }
                case REPLICATED -> {
                    dims = new long[1 + r.nextInt(2)];
                    fill(dims, r);
                }
                default -> {
                    dims = new long[3];
                    fill(dims, r);
                    dims[0] = (long) ep * (1 + r.nextInt(2));
                    name = "layers." + i + ".mlp.experts.w";
                }
            }
            tensors.add(new Tensor(spec(name, dims, dtype), kind, stage, List.of(), cuts));
        }

        List<StoredFragment> stored = new ArrayList<>();
        long[][] tiedCuts = null;
        for (int t = 0; t < tensors.size(); t++) {
            Tensor tensor = tensors.get(t);
            long[][] grid;
            if (!tensor.aliases().isEmpty() && tiedCuts != null) {
                grid = tiedCuts; // tied tensors are stored alike (#3187 checks it)
            } else {
                grid = storedGrid(tensor.spec().shape(), r);
                if (!tensor.aliases().isEmpty()) {
                    tiedCuts = grid;
                }
            }
            stored.addAll(GridFragments.of(tensor.spec(), "t" + t, grid));
        }
        SourceManifest manifest =
                new SourceManifest("oracle", tensors.stream().map(Tensor::spec).toList(), stored);

        int rolloutNodes = 1 + r.nextInt(3);
        List<Node> nodes = new ArrayList<>();
        nodes.add(new Node("trainer-0", Role.TRAINER, 1, 100));
        for (int n = 0; n < rolloutNodes; n++) {
            nodes.add(new Node("rollout-" + n, Role.ROLLOUT, 1 + r.nextInt(2), 100));
        }
        Topology topology = new Topology(nodes);

        int world = dp * pp * tp;
        List<Worker> workers = new ArrayList<>();
        StringBuilder participants = new StringBuilder();
        StringBuilder targets = new StringBuilder();
        int index = 0;
        for (int d = 0; d < dp; d++) {
            for (int p = 0; p < pp; p++) {
                for (int k = 0; k < tp; k++) {
                    String id = "w" + index;
                    int node = index * rolloutNodes / world;
                    int e = moe ? k : 0;
                    sep(participants)
                            .append(
                                    "{\"id\":\"%s\",\"dp\":%d,\"pp\":%d,\"tp\":%d,\"ep\":%d}"
                                            .formatted(id, d, p, k, e));
                    List<TargetFragment> mine = new ArrayList<>();
                    long cursor = r.nextInt(3);
                    for (Tensor tensor : tensors) {
                        if (tensor.stage() != p) {
                            continue;
                        }
                        long[][] box = box(tensor, k, tp);
                        TargetFragment f =
                                TargetFragment.dense(
                                        tensor.spec().name(),
                                        tensor.spec().rolloutDtype(),
                                        tensor.spec().shape(),
                                        Shape.of(box[0]),
                                        Shape.of(box[1]),
                                        "params",
                                        cursor);
                        cursor = f.bufferEnd() + r.nextInt(3);
                        mine.add(f);
                        sep(targets)
                                .append(
                                        "{\"participant\":\"%s\",\"tensor\":\"%s\",\"offset\":%s,\"shape\":%s}"
                                                .formatted(
                                                        id,
                                                        tensor.spec().name(),
                                                        array(box[0]),
                                                        array(box[1])));
                    }
                    workers.add(
                            new Worker(
                                    id,
                                    "i" + d + "@" + node,
                                    "rollout-" + node,
                                    0,
                                    1,
                                    Mode.DIRECT,
                                    "seg-" + id,
                                    mine));
                    index++;
                }
            }
        }

        StringBuilder tensorJson = new StringBuilder();
        for (Tensor tensor : tensors) {
            TensorSpec s = tensor.spec();
            StringBuilder axes = new StringBuilder();
            if (dp > 1) {
                sep(axes).append("{\"semantics\":\"replicated\",\"kind\":\"dp\"}");
            }
            if (pp > 1) {
                sep(axes).append("{\"semantics\":\"ownership\",\"kind\":\"pp\"}");
            }
            if (tp > 1) {
                sep(axes)
                        .append(
                                switch (tensor.kind()) {
                                    case SPLIT_DIM0 ->
                                            "{\"semantics\":\"split\",\"kind\":\"tp\",\"dim\":0}";
                                    case SPLIT_DIM1 ->
                                            "{\"semantics\":\"split\",\"kind\":\"tp\",\"dim\":1}";
                                    case REPLICATED ->
                                            "{\"semantics\":\"replicated\",\"kind\":\"tp\"}";
                                    case EXPERTS ->
                                            "{\"semantics\":\"split\",\"kind\":\"ep\",\"dim\":0}";
                                });
            }
            sep(tensorJson)
                    .append(
                            "{\"name\":\"%s\",\"shape\":%s,\"dtype\":\"%s\",\"itemsize\":%d,\"axes\":[%s],\"aliases\":%s}"
                                    .formatted(
                                            s.name(),
                                            array(s.shape().dims()),
                                            s.rolloutDtype().safetensorsName(),
                                            s.rolloutDtype().bytes(),
                                            axes,
                                            strings(tensor.aliases())));
        }
        StringBuilder storedJson = new StringBuilder();
        for (StoredFragment f : stored) {
            sep(storedJson)
                    .append(
                            "{\"fragment\":\"%s\",\"tensor\":\"%s\",\"offset\":%s,\"shape\":%s,\"bytes\":%d}"
                                    .formatted(
                                            f.fragment(),
                                            f.tensor(),
                                            array(f.offset().dims()),
                                            array(f.shape().dims()),
                                            f.bytes()));
        }
        String json =
                ("{\"seed\":%d,\"tp\":%d,\"pp\":%d,\"ep\":%d,\"dp\":%d,\"participants\":[%s],"
                                + "\"tensors\":[%s],\"stored\":[%s],\"targets\":[%s]}")
                        .formatted(
                                seed,
                                tp,
                                pp,
                                ep,
                                dp,
                                participants,
                                tensorJson,
                                storedJson,
                                targets);
        long readMax = 1 + r.nextInt(128);
        Planner.Options options = new Planner.Options(readMax, readMax + r.nextInt(256));
        return new OracleCase(
                seed,
                tp,
                pp,
                ep,
                dp,
                manifest,
                new TargetPlacement(workers),
                topology,
                options,
                json);
    }

    /** Every case as one JSON document: {@code {"cases": [...]}}. */
    static String json(List<OracleCase> cases) {
        StringBuilder out = new StringBuilder("{\"cases\":[\n");
        for (int i = 0; i < cases.size(); i++) {
            out.append(i == 0 ? "" : ",\n").append(cases.get(i).json());
        }
        return out.append("\n]}\n").toString();
    }

    private static TensorSpec spec(String name, long[] dims, DType dtype) {
        return new TensorSpec(name, Shape.of(dims), dtype, dtype);
    }

    private static void fill(long[] dims, Random r) {
        for (int d = 0; d < dims.length; d++) {
            dims[d] = 1 + r.nextInt(5);
        }
    }

    /** {@code parts + 1} cut points of {@code [0, extent]}, every piece at least one long. */
    private static long[] cuts(long extent, int parts, Random r) {
        TreeSet<Long> inner = new TreeSet<>();
        while (inner.size() < parts - 1) {
            inner.add(1L + r.nextInt((int) extent - 1));
        }
        long[] out = new long[parts + 1];
        int i = 1;
        for (long c : inner) {
            out[i++] = c;
        }
        out[parts] = extent;
        return out;
    }

    /** Rank {@code k}'s box of a tensor: {offset, shape}. */
    private static long[][] box(Tensor tensor, int k, int tp) {
        long[] dims = tensor.spec().shape().dims();
        long[] offset = new long[dims.length];
        long[] shape = dims.clone();
        if (tp == 1) {
            return new long[][] {offset, shape};
        }
        switch (tensor.kind()) {
            case SPLIT_DIM0, SPLIT_DIM1 -> {
                int dim = tensor.kind() == Kind.SPLIT_DIM0 ? 0 : 1;
                long[] cuts = tensor.cuts()[dim];
                offset[dim] = cuts[k];
                shape[dim] = cuts[k + 1] - cuts[k];
            }
            case EXPERTS -> {
                long each = dims[0] / tp;
                offset[0] = k * each;
                shape[0] = each;
            }
            case REPLICATED -> {}
        }
        return new long[][] {offset, shape};
    }

    /** Cut points per dim of a stored grid: dim 0 always, the other dims sometimes. */
    private static long[][] storedGrid(Shape shape, Random r) {
        long[][] grid = new long[shape.rank()][];
        boolean nd = r.nextBoolean();
        for (int d = 0; d < shape.rank(); d++) {
            TreeSet<Long> points = new TreeSet<>(List.of(0L, shape.dim(d)));
            if (d == 0 || nd) {
                for (int k = r.nextInt(3); k > 0; k--) {
                    points.add((long) r.nextInt((int) shape.dim(d) + 1));
                }
            }
            grid[d] = points.stream().mapToLong(Long::longValue).toArray();
        }
        return grid;
    }

    private static StringBuilder sep(StringBuilder out) {
        return out.isEmpty() ? out : out.append(',');
    }

    private static String array(long[] values) {
        return Arrays.toString(values).replace(" ", "");
    }

    private static String strings(List<String> values) {
        return values.stream().map(v -> '"' + v + '"').toList().toString().replace(" ", "");
    }
}
