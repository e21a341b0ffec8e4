package io.weightrelay.reshard.manifest;

import java.util.ArrayList;
import java.util.List;

/**
 * How a publisher cuts tensors into stored objects: along dimension 0, so every fragment is one
 * contiguous byte range of its tensor, each at most {@code maxFragmentBytes} unless a single dim-0
 * slice is larger.
 */
public final class Fragmenter {
    /**
     * Default object size bound: large enough to amortise per-object cost, small enough to spread.
     */
    public static final long DEFAULT_MAX_FRAGMENT_BYTES = 64L << 20;

    private Fragmenter() {}

    public static SourceManifest fragment(String model, List<TensorSpec> tensors) {
        return fragment(model, tensors, DEFAULT_MAX_FRAGMENT_BYTES);
    }

    public static SourceManifest fragment(
            String model, List<TensorSpec> tensors, long maxFragmentBytes) {
        if (maxFragmentBytes <= 0) {
            throw new IllegalArgumentException("maxFragmentBytes must be positive");
        }
        List<StoredFragment> fragments = new ArrayList<>(tensors.size());
        for (TensorSpec t : tensors) {
            fragments.addAll(fragmentsOf(t, maxFragmentBytes));
        }
        return new SourceManifest(model, tensors, fragments);
    }

    /** Fragments of one tensor; ids are {@code {tensor}@{index}}. */
    public static List<StoredFragment> fragmentsOf(TensorSpec tensor, long maxFragmentBytes) {
        Shape shape = tensor.shape();
        int elementBytes = tensor.rolloutDtype().bytes();
        if (shape.rank() == 0 || shape.dim(0) == 0) {
            return List.of(
                    new StoredFragment(
                            tensor.name() + "@0",
                            tensor.name(),
                            Shape.zeros(shape.rank()),
                            shape,
                            tensor.bytes()));
        }
        long rowBytes = Math.multiplyExact(shape.numel() / shape.dim(0), (long) elementBytes);
        long rowsPerFragment =
                rowBytes == 0 ? shape.dim(0) : Math.max(1, maxFragmentBytes / rowBytes);
        long pieces = (shape.dim(0) + rowsPerFragment - 1) / rowsPerFragment;
        // Equal-sized pieces spread a tensor more evenly than a short remainder piece would.
        long base = shape.dim(0) / pieces;
        long extra = shape.dim(0) % pieces;
        List<StoredFragment> out = new ArrayList<>((int) pieces);
        long row = 0;
        for (int i = 0; i < pieces; i++) {
            long rows = base + (i < extra ? 1 : 0);
            Shape fragmentShape = shape.with(0, rows);
            out.add(
                    new StoredFragment(
                            tensor.name() + "@" + i,
                            tensor.name(),
                            Shape.zeros(shape.rank()).with(0, row),
                            fragmentShape,
                            rows * rowBytes));
            row += rows;
        }
        return out;
    }
}
