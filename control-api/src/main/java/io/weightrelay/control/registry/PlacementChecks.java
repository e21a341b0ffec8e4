package io.weightrelay.control.registry;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.reshard.placement.FragmentTemplate.Entry;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.function.ToIntFunction;

/**
 * The layout rules of a worker's target placement, checked before any plan uses it: a placement
 * that disagrees with the manifest would write wrong bytes into a rollout worker's weights without
 * anyone noticing, so it fails closed with a problem that names the instance, the worker and the
 * tensor.
 *
 * <p>Registration checks what needs no manifest, taking the innermost stride of each box as its
 * element size ({@link #registration}); the plan checks the same layout again against the manifest,
 * with each tensor's rollout dtype ({@link #againstManifest}). The layouts accepted are the ones
 * the loader's copy code is correct for: each element lands at {@code bufferOffset + sum(index *
 * stride)}, the innermost stride is the element size, and no two elements of one buffer share a
 * byte (within a box or between boxes).
 */
public final class PlacementChecks {

    /** More contiguous runs than this in one interleaved group of boxes are not verified. */
    static final long MAX_VERIFIED_RUNS = 1L << 22;

    private PlacementChecks() {}

    /** What registration can check without the manifest, on inline fragments. */
    static void registration(String instance, WorkerPlacement worker) {
        registration(instance, worker, template(instance, worker));
    }

    /**
     * The template of a worker's inline fragments: every number present and non-negative, and one
     * entry per dimension in offset, shape and strides (what a template cannot encode otherwise).
     */
    public static FragmentTemplate template(String instance, WorkerPlacement worker) {
        List<TargetFragment> fragments =
                worker.getFragments() == null ? List.of() : worker.getFragments();
        List<Entry> entries = new ArrayList<>(fragments.size());
        for (int i = 0; i < fragments.size(); i++) {
            TargetFragment f = fragments.get(i);
            Where at = new Where(instance, worker, i, f.getTensor());
            String given =
                    "offset "
                            + f.getOffset()
                            + ", shape "
                            + f.getShape()
                            + ", strides "
                            + f.getStrides();
            if (!allNonNegative(f.getOffset())
                    || !allNonNegative(f.getShape())
                    || !allNonNegative(f.getStrides())
                    || f.getBufferOffset() == null
                    || f.getBufferOffset() < 0) {
                throw at.problem(
                        RegistryProblems.INVALID_PLACEMENT,
                        "offset, shape and strides hold numbers",
                        "non-negative integers",
                        given);
            }
            int rank = f.getShape().size();
            if (f.getOffset().size() != rank || f.getStrides().size() != rank) {
                throw at.problem(
                                RegistryProblems.PLACEMENT_RANK_MISMATCH,
                                "offset, shape and strides must have one entry per dimension",
                                "rank " + rank,
                                given)
                        .with("bufferId", f.getBufferId());
            }
            entries.add(
                    new Entry(
                            f.getTensor(),
                            longs(f.getOffset()),
                            longs(f.getShape()),
                            f.getBufferId(),
                            f.getBufferOffset(),
                            longs(f.getStrides())));
        }
        return FragmentTemplate.of(entries);
    }

    /**
     * What registration can check without the manifest: the byte layout of the template's boxes in
     * the worker's buffers, taking each box's innermost stride as its element size.
     */
    public static void registration(
            String instance, WorkerPlacement worker, FragmentTemplate template) {
        layout(instance, worker, template.entries(), PlacementChecks::innermostStride);
    }

    private static long[] longs(List<Long> values) {
        long[] out = new long[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get(i);
        }
        return out;
    }

    /**
     * What the plan checks: every fragment against its tensor in the manifest, then the byte layout
     * with the rollout dtype's element size; a compatibility worker's buffer must hold the whole
     * safetensors image.
     *
     * @param tensors the manifest's tensors by name
     * @param imageBytes size of the safetensors image of the manifest
     */
    public static void againstManifest(
            String instance,
            WorkerPlacement worker,
            Map<String, TensorSpec> tensors,
            long imageBytes) {
        againstManifest(
                instance,
                worker,
                worker.getMode() == ConsumeMode.COMPAT ? null : template(instance, worker),
                tensors,
                imageBytes);
    }

    /**
     * Like {@link #againstManifest(String, WorkerPlacement, Map, long)}, with the worker's
     * fragments given as a template (null for a compatibility worker).
     */
    public static void againstManifest(
            String instance,
            WorkerPlacement worker,
            FragmentTemplate template,
            Map<String, TensorSpec> tensors,
            long imageBytes) {
        if (worker.getMode() == ConsumeMode.COMPAT) {
            compatImage(instance, worker, imageBytes);
            return;
        }
        List<Entry> fragments = template.entries();
        for (int i = 0; i < fragments.size(); i++) {
            Entry f = fragments.get(i);
            Where at = new Where(instance, worker, i, f.tensor());
            TensorSpec spec = tensors.get(f.tensor());
            if (spec == null) {
                throw at.problem(
                        RegistryProblems.PLACEMENT_UNKNOWN_TENSOR,
                        "the manifest has no such tensor",
                        "a tensor of the manifest",
                        f.tensor());
            }
            long[] dims = spec.shape().dims();
            if (f.rank() != dims.length) {
                throw at.problem(
                        RegistryProblems.PLACEMENT_TENSOR_RANK_MISMATCH,
                        "offset, shape and strides must have the tensor's rank",
                        "rank " + dims.length + " (shape " + spec.shape() + ")",
                        "offset "
                                + Arrays.toString(f.offset())
                                + ", shape "
                                + Arrays.toString(f.shape())
                                + ", strides "
                                + Arrays.toString(f.strides()));
            }
            for (int d = 0; d < dims.length; d++) {
                long end = f.offset()[d] + f.shape()[d];
                if (end < 0 || end > dims[d]) {
                    throw at.problem(
                            RegistryProblems.PLACEMENT_OUTSIDE_TENSOR,
                            "the box leaves the tensor in dimension " + d,
                            "inside " + spec.shape(),
                            "offset "
                                    + Arrays.toString(f.offset())
                                    + ", shape "
                                    + Arrays.toString(f.shape()));
                }
            }
            int element = spec.rolloutDtype().bytes();
            if (dims.length > 0 && !f.empty() && f.strides()[dims.length - 1] != element) {
                throw at.problem(
                                RegistryProblems.PLACEMENT_DTYPE_MISMATCH,
                                "the innermost stride must be the size of the rollout dtype "
                                        + spec.rolloutDtype().safetensorsName(),
                                element + " bytes",
                                f.strides()[dims.length - 1] + " bytes")
                        .with("dtype", spec.rolloutDtype().safetensorsName());
            }
        }
        layout(instance, worker, fragments, f -> tensors.get(f.tensor()).rolloutDtype().bytes());
    }

    /** A compatibility worker's image buffer holds the whole safetensors image. */
    public static void compatImage(String instance, WorkerPlacement worker, long imageBytes) {
        ReceiveBuffer image = compatBuffer(worker);
        if (image.getSize() < imageBytes) {
            throw Where.worker(instance, worker)
                    .problem(
                            RegistryProblems.PLACEMENT_IMAGE_TOO_LARGE,
                            "receive buffer '"
                                    + image.getBufferId()
                                    + "' is smaller than the safetensors image of the"
                                    + " manifest",
                            imageBytes + " bytes",
                            image.getSize() + " bytes")
                    .with("bufferId", image.getBufferId());
        }
    }

    /** The buffer a compatibility worker receives its image in, as the loader picks it. */
    private static ReceiveBuffer compatBuffer(WorkerPlacement worker) {
        for (ReceiveBuffer b : worker.getBuffers()) {
            if (Worker.COMPAT_BUFFER.equals(b.getBufferId())) {
                return b;
            }
        }
        return worker.getBuffers().get(0);
    }

    /**
     * The byte layout of a worker's boxes: strides that keep a box's elements apart, every box
     * inside its buffer, no two boxes of one buffer sharing a byte. Ranks are already equal.
     */
    private static void layout(
            String instance,
            WorkerPlacement worker,
            List<Entry> fragments,
            ToIntFunction<Entry> elementBytes) {
        Map<String, Long> bufferSizes = new HashMap<>();
        for (ReceiveBuffer b : worker.getBuffers()) {
            bufferSizes.put(b.getBufferId(), b.getSize());
        }
        Map<String, List<Extent>> byBuffer = new LinkedHashMap<>();
        for (int i = 0; i < fragments.size(); i++) {
            Entry f = fragments.get(i);
            if (f.empty()) {
                continue;
            }
            Where at = new Where(instance, worker, i, f.tensor());
            int element = elementBytes.applyAsInt(f);
            int rank = f.rank();
            if (rank > 0 && f.strides()[rank - 1] < 1) {
                throw badStrides(at, f, element, "a positive innermost stride");
            }
            int[] order = ascendingStrides(f);
            long needed = element;
            for (int d : order) {
                long stride = f.strides()[d];
                if (stride < needed) {
                    throw badStrides(
                            at,
                            f,
                            element,
                            "stride of dimension " + d + " at least " + needed + " bytes");
                }
                needed = mulOrMax(stride, f.shape()[d]);
            }
            long end;
            try {
                end = Math.addExact(f.bufferOffset(), element);
                for (int d = 0; d < rank; d++) {
                    end = Math.addExact(end, Math.multiplyExact(f.shape()[d] - 1, f.strides()[d]));
                }
            } catch (ArithmeticException ex) {
                end = Long.MAX_VALUE;
            }
            Long size = bufferSizes.get(f.buffer());
            if (size == null) {
                throw at.problem(
                                RegistryProblems.INVALID_PLACEMENT,
                                "the box names a buffer the worker does not register",
                                "one of " + bufferSizes.keySet(),
                                f.buffer())
                        .with("bufferId", f.buffer());
            }
            if (end > size) {
                throw at.problem(
                                RegistryProblems.PLACEMENT_OUTSIDE_BUFFER,
                                "the box's bytes end beyond its buffer '" + f.buffer() + "'",
                                "at most " + size + " bytes",
                                "bytes " + f.bufferOffset() + " to " + end)
                        .with("bufferId", f.buffer());
            }
            byBuffer.computeIfAbsent(f.buffer(), k -> new ArrayList<>())
                    .add(new Extent(i, f.bufferOffset(), end, element, order));
        }
        byBuffer.forEach(
                (buffer, extents) -> disjoint(instance, worker, fragments, buffer, extents));
    }

    /** One box's byte hull in its buffer. */
    private record Extent(int fragment, long start, long end, int element, int[] order) {}

    /**
     * Boxes whose hulls do not meet are disjoint; boxes whose hulls interleave (columns of one
     * matrix buffer, say) are compared run by run, merged in address order.
     */
    private static void disjoint(
            String instance,
            WorkerPlacement worker,
            List<Entry> fragments,
            String buffer,
            List<Extent> extents) {
        extents.sort(Comparator.comparingLong(Extent::start));
        int first = 0;
        long hullEnd = Long.MIN_VALUE;
        for (int k = 0; k <= extents.size(); k++) {
            if (k == extents.size() || extents.get(k).start() >= hullEnd) {
                if (k - first > 1) {
                    disjointRuns(instance, worker, fragments, buffer, extents.subList(first, k));
                }
                first = k;
                hullEnd = Long.MIN_VALUE;
            }
            if (k < extents.size()) {
                hullEnd = Math.max(hullEnd, extents.get(k).end());
            }
        }
    }

    private static void disjointRuns(
            String instance,
            WorkerPlacement worker,
            List<Entry> fragments,
            String buffer,
            List<Extent> group) {
        PriorityQueue<RunCursor> queue =
                new PriorityQueue<>(Comparator.comparingLong(RunCursor::start));
        long total = 0;
        for (Extent e : group) {
            RunCursor cursor = new RunCursor(e, fragments.get(e.fragment()));
            total += cursor.runs;
            queue.add(cursor);
        }
        Extent worst = group.get(0);
        if (total > MAX_VERIFIED_RUNS) {
            throw overlap(
                    instance,
                    worker,
                    buffer,
                    fragments,
                    worst.fragment(),
                    group.get(1).fragment(),
                    "boxes interleaved in at most " + MAX_VERIFIED_RUNS + " runs",
                    total + " runs");
        }
        long lastEnd = Long.MIN_VALUE;
        int lastOwner = -1;
        while (!queue.isEmpty()) {
            RunCursor c = queue.poll();
            long start = c.start();
            if (start < lastEnd && c.extent.fragment() != lastOwner) {
                throw overlap(
                        instance,
                        worker,
                        buffer,
                        fragments,
                        c.extent.fragment(),
                        lastOwner,
                        "disjoint bytes",
                        "both write byte " + start);
            }
            long end = start + c.inner;
            if (end > lastEnd) {
                lastEnd = end;
                lastOwner = c.extent.fragment();
            }
            if (c.advance()) {
                queue.add(c);
            }
        }
    }

    /**
     * Walks one box's contiguous runs in increasing address order: the innermost dimensions that
     * are dense form one run, the others loop, largest stride outermost.
     */
    private static final class RunCursor {
        final Extent extent;
        final long inner;
        final long runs;
        private final long[] counts;
        private final long[] strides;
        private final long[] index;
        private long start;

        RunCursor(Extent extent, Entry f) {
            this.extent = extent;
            int[] order = extent.order();
            long run = extent.element();
            int d = 0;
            while (d < order.length && f.strides()[order[d]] == run) {
                run *= f.shape()[order[d]];
                d++;
            }
            this.inner = run;
            int loops = order.length - d;
            counts = new long[loops];
            strides = new long[loops];
            long n = 1;
            for (int k = 0; k < loops; k++) {
                // outermost (largest stride) first
                int dim = order[order.length - 1 - k];
                counts[k] = f.shape()[dim];
                strides[k] = f.strides()[dim];
                n = mulOrMax(n, counts[k]);
            }
            this.runs = n;
            this.index = new long[loops];
            this.start = extent.start();
        }

        long start() {
            return start;
        }

        boolean advance() {
            for (int k = counts.length - 1; k >= 0; k--) {
                if (++index[k] < counts[k]) {
                    start += strides[k];
                    return true;
                }
                start -= (counts[k] - 1) * strides[k];
                index[k] = 0;
            }
            return false;
        }
    }

    /** Dimensions of extent above 1, by ascending stride (the others place nothing apart). */
    private static int[] ascendingStrides(Entry f) {
        List<Integer> dims = new ArrayList<>();
        for (int d = 0; d < f.rank(); d++) {
            if (f.shape()[d] > 1) {
                dims.add(d);
            }
        }
        dims.sort(
                Comparator.comparingLong((Integer d) -> f.strides()[d])
                        .thenComparing(Comparator.reverseOrder()));
        return dims.stream().mapToInt(Integer::intValue).toArray();
    }

    private static int innermostStride(Entry f) {
        int rank = f.rank();
        // A scalar's element size is unknown before the manifest: it takes at least one byte.
        return rank == 0 ? 1 : (int) Math.min(Integer.MAX_VALUE, f.strides()[rank - 1]);
    }

    private static boolean allNonNegative(List<Long> values) {
        return values != null && values.stream().allMatch(v -> v != null && v >= 0);
    }

    private static long mulOrMax(long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException ex) {
            return Long.MAX_VALUE;
        }
    }

    private static RelayException badStrides(Where at, Entry f, int element, String expected) {
        return at.problem(
                        RegistryProblems.PLACEMENT_BAD_STRIDES,
                        "with "
                                + element
                                + "-byte elements and the innermost dimension dense, the strides"
                                + " do not keep the elements of a box of shape "
                                + Arrays.toString(f.shape())
                                + " apart",
                        expected,
                        "strides " + Arrays.toString(f.strides()))
                .with("bufferId", f.buffer());
    }

    private static RelayException overlap(
            String instance,
            WorkerPlacement worker,
            String buffer,
            List<Entry> fragments,
            int fragment,
            int other,
            String expected,
            String given) {
        Entry f = fragments.get(fragment);
        Entry o = fragments.get(other);
        return new Where(instance, worker, fragment, f.tensor())
                .problem(
                        RegistryProblems.PLACEMENT_OVERLAP,
                        "the box overlaps the box of tensor "
                                + o.tensor()
                                + " (fragment "
                                + other
                                + ") in buffer '"
                                + buffer
                                + "'",
                        expected,
                        given)
                .with("bufferId", buffer)
                .with("otherTensor", o.tensor())
                .with("otherFragment", other);
    }

    /**
     * What a problem is about: the instance, the worker and, unless null, the tensor and its
     * fragment (index in the worker's list).
     */
    private record Where(String instance, WorkerPlacement worker, int fragment, String tensor) {

        static Where worker(String instance, WorkerPlacement worker) {
            return new Where(instance, worker, -1, null);
        }

        /** The problem, with what was expected and what was given. */
        RelayException problem(ProblemKind kind, String what, String expected, String given) {
            StringBuilder detail = new StringBuilder();
            detail.append("instance ")
                    .append(instance)
                    .append(", worker ")
                    .append(worker.getWorkerId());
            if (tensor != null) {
                detail.append(", tensor ")
                        .append(tensor)
                        .append(" (fragment ")
                        .append(fragment)
                        .append(')');
            }
            detail.append(": ")
                    .append(what)
                    .append("; expected ")
                    .append(expected)
                    .append(", given ")
                    .append(given);
            RelayException ex =
                    kind.exception(detail.toString())
                            .with("instanceId", instance)
                            .with("worker", worker.getWorkerId())
                            .with("expected", expected)
                            .with("given", given);
            if (tensor != null) {
                ex.with("tensor", tensor).with("fragment", fragment);
            }
            return ex;
        }
    }
}
