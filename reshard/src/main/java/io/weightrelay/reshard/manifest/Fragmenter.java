package io.weightrelay.reshard.manifest;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How a publisher cuts tensors into stored objects: along dimension 0, so every fragment is one
 * contiguous byte range of its tensor, each at most {@code maxFragmentBytes} unless a single dim-0
 * slice is larger. A block-quantised FP8 tensor is cut on 128-row bands and its scale tensor
 * follows it fragment for fragment ({@link BlockScales}).
 */
public final class Fragmenter {
    /**
     * Default object size bound: large enough to amortise per-object cost, small enough to spread.
     */
    public static final long DEFAULT_MAX_FRAGMENT_BYTES = 64L << 20;

    /**
     * The most fragments one manifest is cut into: a Kimi-K2-class model (about a terabyte in
     * 70,000 tensors) is under 100,000 at the default size. A manifest past it is refused before
     * any fragment is built, so a huge shape with a tiny {@code maxFragmentBytes} cannot exhaust
     * memory.
     */
    public static final long MAX_FRAGMENTS = 1_000_000;

    private Fragmenter() {}

    public static SourceManifest fragment(String model, List<TensorSpec> tensors) {
        return fragment(model, tensors, DEFAULT_MAX_FRAGMENT_BYTES);
    }

    public static SourceManifest fragment(
            String model, List<TensorSpec> tensors, long maxFragmentBytes) {
        if (maxFragmentBytes <= 0) {
            throw new IllegalArgumentException("maxFragmentBytes must be positive");
        }
        Map<String, Integer> weightOfScale = BlockScales.weightOfScale(tensors);
        long count = 0;
        for (TensorSpec t : tensors) {
            count += pieces(t, maxFragmentBytes);
            if (count > MAX_FRAGMENTS) {
                throw tooMany(model + "'s manifest", count, maxFragmentBytes);
            }
        }
        List<StoredFragment> fragments = new ArrayList<>((int) count);
        for (TensorSpec t : tensors) {
            Integer weight = weightOfScale.get(t.name());
            if (weight != null) {
                // One scale fragment per weight fragment, with exactly its scale rows.
                TensorSpec w = tensors.get(weight);
                List<StoredFragment> parts = fragmentsOf(w, maxFragmentBytes);
                for (int i = 0; i < parts.size(); i++) {
                    fragments.add(BlockScales.scaleFragmentOf(w, parts.get(i), i));
                }
            } else {
                fragments.addAll(fragmentsOf(t, maxFragmentBytes));
            }
        }
        return new SourceManifest(model, tensors, fragments);
    }

    /** Fragments of one tensor; ids are {@code {tensor}@{index}}. */
    public static List<StoredFragment> fragmentsOf(TensorSpec tensor, long maxFragmentBytes) {
        if (maxFragmentBytes <= 0) {
            throw new IllegalArgumentException("maxFragmentBytes must be positive");
        }
        long pieces = pieces(tensor, maxFragmentBytes);
        if (pieces > MAX_FRAGMENTS) {
            throw tooMany("tensor " + tensor.name(), pieces, maxFragmentBytes);
        }
        if (BlockScales.quantized(tensor) && tensor.shape().rank() == 2) {
            return BlockScales.weightFragments(tensor, maxFragmentBytes);
        }
        Shape shape = tensor.shape();
        if (shape.rank() == 0 || shape.dim(0) == 0) {
            return List.of(
                    new StoredFragment(
                            tensor.name() + "@0",
                            tensor.name(),
                            Shape.zeros(shape.rank()),
                            shape,
                            tensor.bytes()));
        }
        long rowBytes = rowBytes(tensor);
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

    /** How many fragments {@link #fragmentsOf} cuts {@code tensor} into, without building them. */
    static long pieces(TensorSpec tensor, long maxFragmentBytes) {
        Shape shape = tensor.shape();
        if (shape.rank() == 0 || shape.dim(0) == 0) {
            return 1;
        }
        long rowBytes = rowBytes(tensor);
        long rowsPerFragment =
                rowBytes == 0 ? shape.dim(0) : Math.max(1, maxFragmentBytes / rowBytes);
        return (shape.dim(0) - 1) / rowsPerFragment + 1;
    }

    private static long rowBytes(TensorSpec tensor) {
        Shape shape = tensor.shape();
        return Math.multiplyExact(
                shape.numel() / shape.dim(0), (long) tensor.rolloutDtype().bytes());
    }

    private static IllegalArgumentException tooMany(
            String what, long count, long maxFragmentBytes) {
        return new IllegalArgumentException(
                what
                        + " would be cut into "
                        + (count > MAX_FRAGMENTS ? "more than " + MAX_FRAGMENTS : count)
                        + " fragments of at most "
                        + maxFragmentBytes
                        + " bytes; at most "
                        + MAX_FRAGMENTS
                        + " are stored per generation (raise maxFragmentBytes)");
    }
}
