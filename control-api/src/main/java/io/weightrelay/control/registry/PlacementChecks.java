package io.weightrelay.control.registry;

import io.weightrelay.api.control.model.ConsumeMode;
import io.weightrelay.api.control.model.ReceiveBuffer;
import io.weightrelay.api.control.model.TargetFragment;
import io.weightrelay.api.control.model.WorkerPlacement;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
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

    /** What registration can check without the manifest. */
    static void registration(String instance, WorkerPlacement worker) {
        List<TargetFragment> fragments = fragments(worker);
        for (int i = 0; i < fragments.size(); i++) {
            TargetFragment f = fragments.get(i);
            if (!allNonNegative(f.getOffset())
                    || !allNonNegative(f.getShape())
                    || !allNonNegative(f.getStrides())) {
                throw problem(
                        RegistryProblems.INVALID_PLACEMENT,
                        instance,
                        worker,
                        i,
                        f,
                        "offset, shape and strides hold numbers",
                        "non-negative integers",
                        "offset "
                                + f.getOffset()
                                + ", shape "
                                + f.getShape()
                                + ", strides "
                                + f.getStrides());
            }
            int rank = f.getShape().size();
            if (f.getOffset().size() != rank || f.getStrides().size() != rank) {
                throw problem(
                                RegistryProblems.PLACEMENT_RANK_MISMATCH,
                                instance,
                                worker,
                                i,
                                f,
                                "offset, shape and strides must have one entry per dimension",
                                "rank " + rank,
                                "offset "
                                        + f.getOffset()
                                        + ", shape "
                                        + f.getShape()
                                        + ", strides "
                                        + f.getStrides())
                        .with("bufferId", f.getBufferId());
            }
        }
        layout(instance, worker, PlacementChecks::innermostStride);
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
        if (worker.getMode() == ConsumeMode.COMPAT) {
            ReceiveBuffer image = compatBuffer(worker);
            if (image.getSize() < imageBytes) {
                throw problem(
                                RegistryProblems.PLACEMENT_IMAGE_TOO_LARGE,
                                instance,
                                worker,
                                -1,
                                null,
                                "receive buffer '"
                                        + image.getBufferId()
                                        + "' is smaller than the safetensors image of the"
                                        + " manifest",
                                imageBytes + " bytes",
                                image.getSize() + " bytes")
                        .with("bufferId", image.getBufferId());
            }
            return;
        }
        List<TargetFragment> fragments = fragments(worker);
        for (int i = 0; i < fragments.size(); i++) {
            TargetFragment f = fragments.get(i);
            TensorSpec spec = tensors.get(f.getTensor());
            if (spec == null) {
                throw problem(
                        RegistryProblems.PLACEMENT_UNKNOWN_TENSOR,
                        instance,
                        worker,
                        i,
                        f,
                        "the manifest has no such tensor",
                        "a tensor of the manifest",
                        f.getTensor());
            }
            long[] dims = spec.shape().dims();
            if (f.getOffset().size() != dims.length
                    || f.getShape().size() != dims.length
                    || f.getStrides().size() != dims.length) {
                throw problem(
                        RegistryProblems.PLACEMENT_TENSOR_RANK_MISMATCH,
                        instance,
                        worker,
                        i,
                        f,
                        "offset, shape and strides must have the tensor's rank",
                        "rank " + dims.length + " (shape " + spec.shape() + ")",
                        "offset "
                                + f.getOffset()
                                + ", shape "
                                + f.getShape()
                                + ", strides "
                                + f.getStrides());
            }
            for (int d = 0; d < dims.length; d++) {
                long end = f.getOffset().get(d) + f.getShape().get(d);
                if (end < 0 || end > dims[d]) {
                    throw problem(
                            RegistryProblems.PLACEMENT_OUTSIDE_TENSOR,
                            instance,
                            worker,
                            i,
                            f,
                            "the box leaves the tensor in dimension " + d,
                            "inside " + spec.shape(),
                            "offset " + f.getOffset() + ", shape " + f.getShape());
                }
            }
            int element = spec.rolloutDtype().bytes();
            if (dims.length > 0 && !empty(f) && f.getStrides().get(dims.length - 1) != element) {
                throw problem(
                                RegistryProblems.PLACEMENT_DTYPE_MISMATCH,
                                instance,
                                worker,
                                i,
                                f,
                                "the innermost stride must be the size of the rollout dtype "
                                        + spec.rolloutDtype().safetensorsName(),
                                element + " bytes",
                                f.getStrides().get(dims.length - 1) + " bytes")
                        .with("dtype", spec.rolloutDtype().safetensorsName());
            }
        }
        layout(instance, worker, f -> tensors.get(f.getTensor()).rolloutDtype().bytes());
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
            String instance, WorkerPlacement worker, ToIntFunction<TargetFragment> elementBytes) {
        Map<String, Long> bufferSizes = new HashMap<>();
        for (ReceiveBuffer b : worker.getBuffers()) {
            bufferSizes.put(b.getBufferId(), b.getSize());
        }
        List<TargetFragment> fragments = fragments(worker);
        Map<String, List<Extent>> byBuffer = new LinkedHashMap<>();
        for (int i = 0; i < fragments.size(); i++) {
            TargetFragment f = fragments.get(i);
            if (empty(f)) {
                continue;
            }
            int element = elementBytes.applyAsInt(f);
            int rank = f.getShape().size();
            if (rank > 0 && f.getStrides().get(rank - 1) < 1) {
                throw badStrides(instance, worker, i, f, element, "a positive innermost stride");
            }
            int[] order = ascendingStrides(f);
            long needed = element;
            for (int d : order) {
                long stride = f.getStrides().get(d);
                if (stride < needed) {
                    throw badStrides(
                            instance,
                            worker,
                            i,
                            f,
                            element,
                            "stride of dimension " + d + " at least " + needed + " bytes");
                }
                needed = mulOrMax(stride, f.getShape().get(d));
            }
            long end;
            try {
                end = Math.addExact(f.getBufferOffset(), element);
                for (int d = 0; d < rank; d++) {
                    end =
                            Math.addExact(
                                    end,
                                    Math.multiplyExact(
                                            f.getShape().get(d) - 1, f.getStrides().get(d)));
                }
            } catch (ArithmeticException ex) {
                end = Long.MAX_VALUE;
            }
            Long size = bufferSizes.get(f.getBufferId());
            if (size == null) {
                throw problem(
                                RegistryProblems.INVALID_PLACEMENT,
                                instance,
                                worker,
                                i,
                                f,
                                "the box names a buffer the worker does not register",
                                "one of " + bufferSizes.keySet(),
                                f.getBufferId())
                        .with("bufferId", f.getBufferId());
            }
            if (end > size) {
                throw problem(
                                RegistryProblems.PLACEMENT_OUTSIDE_BUFFER,
                                instance,
                                worker,
                                i,
                                f,
                                "the box's bytes end beyond its buffer '" + f.getBufferId() + "'",
                                "at most " + size + " bytes",
                                "bytes " + f.getBufferOffset() + " to " + end)
                        .with("bufferId", f.getBufferId());
            }
            byBuffer.computeIfAbsent(f.getBufferId(), k -> new ArrayList<>())
                    .add(new Extent(i, f.getBufferOffset(), end, element, order));
        }
        byBuffer.forEach((buffer, extents) -> disjoint(instance, worker, buffer, extents));
    }

    /** One box's byte hull in its buffer. */
    private record Extent(int fragment, long start, long end, int element, int[] order) {}

    /**
     * Boxes whose hulls do not meet are disjoint; boxes whose hulls interleave (columns of one
     * matrix buffer, say) are compared run by run, merged in address order.
     */
    private static void disjoint(
            String instance, WorkerPlacement worker, String buffer, List<Extent> extents) {
        extents.sort(Comparator.comparingLong(Extent::start));
        int first = 0;
        long hullEnd = Long.MIN_VALUE;
        for (int k = 0; k <= extents.size(); k++) {
            if (k == extents.size() || extents.get(k).start() >= hullEnd) {
                if (k - first > 1) {
                    disjointRuns(instance, worker, buffer, extents.subList(first, k));
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
            String instance, WorkerPlacement worker, String buffer, List<Extent> group) {
        List<TargetFragment> fragments = fragments(worker);
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

        RunCursor(Extent extent, TargetFragment f) {
            this.extent = extent;
            int[] order = extent.order();
            long run = extent.element();
            int d = 0;
            while (d < order.length && f.getStrides().get(order[d]) == run) {
                run *= f.getShape().get(order[d]);
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
                counts[k] = f.getShape().get(dim);
                strides[k] = f.getStrides().get(dim);
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
    private static int[] ascendingStrides(TargetFragment f) {
        List<Integer> dims = new ArrayList<>();
        for (int d = 0; d < f.getShape().size(); d++) {
            if (f.getShape().get(d) > 1) {
                dims.add(d);
            }
        }
        dims.sort(
                Comparator.comparingLong((Integer d) -> f.getStrides().get(d))
                        .thenComparing(Comparator.reverseOrder()));
        return dims.stream().mapToInt(Integer::intValue).toArray();
    }

    private static int innermostStride(TargetFragment f) {
        int rank = f.getStrides().size();
        // A scalar's element size is unknown before the manifest: it takes at least one byte.
        return rank == 0 ? 1 : (int) Math.min(Integer.MAX_VALUE, f.getStrides().get(rank - 1));
    }

    private static boolean allNonNegative(List<Long> values) {
        return values.stream().allMatch(v -> v != null && v >= 0);
    }

    private static boolean empty(TargetFragment f) {
        return f.getShape().stream().anyMatch(d -> d == 0);
    }

    private static long mulOrMax(long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException ex) {
            return Long.MAX_VALUE;
        }
    }

    private static List<TargetFragment> fragments(WorkerPlacement worker) {
        return worker.getFragments() == null ? List.of() : worker.getFragments();
    }

    private static RelayException badStrides(
            String instance,
            WorkerPlacement worker,
            int i,
            TargetFragment f,
            int element,
            String expected) {
        return problem(
                        RegistryProblems.PLACEMENT_BAD_STRIDES,
                        instance,
                        worker,
                        i,
                        f,
                        "with "
                                + element
                                + "-byte elements and the innermost dimension dense, the strides"
                                + " do not keep the elements of a box of shape "
                                + f.getShape()
                                + " apart",
                        expected,
                        "strides " + f.getStrides())
                .with("bufferId", f.getBufferId());
    }

    private static RelayException overlap(
            String instance,
            WorkerPlacement worker,
            String buffer,
            List<TargetFragment> fragments,
            int fragment,
            int other,
            String expected,
            String given) {
        TargetFragment f = fragments.get(fragment);
        TargetFragment o = fragments.get(other);
        return problem(
                        RegistryProblems.PLACEMENT_OVERLAP,
                        instance,
                        worker,
                        fragment,
                        f,
                        "the box overlaps the box of tensor "
                                + o.getTensor()
                                + " (fragment "
                                + other
                                + ") in buffer '"
                                + buffer
                                + "'",
                        expected,
                        given)
                .with("bufferId", buffer)
                .with("otherTensor", o.getTensor())
                .with("otherFragment", other);
    }

    /**
     * A problem naming the instance, the worker, the tensor and its fragment (index in the worker's
     * list), with what was expected and what was given.
     */
    private static RelayException problem(
            ProblemKind kind,
            String instance,
            WorkerPlacement worker,
            int fragment,
            TargetFragment f,
            String what,
            String expected,
            String given) {
        StringBuilder detail = new StringBuilder();
        detail.append("instance ")
                .append(instance)
                .append(", worker ")
                .append(worker.getWorkerId());
        if (f != null) {
            detail.append(", tensor ")
                    .append(f.getTensor())
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
        if (f != null) {
            ex.with("tensor", f.getTensor()).with("fragment", fragment);
        }
        return ex;
    }
}
