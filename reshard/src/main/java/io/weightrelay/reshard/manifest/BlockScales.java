package io.weightrelay.reshard.manifest;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The block-scaled FP8 convention of DeepSeek-V3 / Kimi-K2 checkpoints, as manifests carry it. A
 * 2-D tensor the trainer holds in fp32, bf16 or fp16 whose rollout dtype is {@link DType#F8_E4M3}
 * is <em>block quantised</em>: the publisher stores it as E4M3 and, beside it, its scale tensor
 * {@code <name>_scale_inv} (F32 in both dtypes, {@code [ceil(rows / 128), ceil(cols / 128)]}, the
 * dequantisation multiplier of each 128 x 128 block), which the publisher computes and no trainer
 * writes. Fragments of a block-quantised tensor are dim-0 slices of whole 128-row bands (the last
 * may be partial), and its scale tensor has one fragment per weight fragment, holding exactly that
 * fragment's scale rows, so each weight fragment converts on its own into two objects.
 */
public final class BlockScales {

    /** Rows and columns of one scale block. */
    public static final int BLOCK = 128;

    /** The scale tensor's name is the weight's plus this (vLLM's and SGLang's name). */
    public static final String SUFFIX = "_scale_inv";

    private BlockScales() {}

    /** Whether the publisher block-quantises this tensor to FP8. */
    public static boolean quantized(TensorSpec t) {
        return t.rolloutDtype() == DType.F8_E4M3
                && (t.trainerDtype() == DType.F32
                        || t.trainerDtype() == DType.BF16
                        || t.trainerDtype() == DType.F16);
    }

    public static String scaleName(String weight) {
        return weight + SUFFIX;
    }

    /** {@code [ceil(rows / 128), ceil(cols / 128)]} of a 2-D weight. */
    public static Shape scaleShape(Shape weight) {
        if (weight.rank() != 2) {
            throw new IllegalArgumentException("block scales need a 2-D weight, not " + weight);
        }
        return Shape.of(blocks(weight.dim(0)), blocks(weight.dim(1)));
    }

    /** The scale tensor of a block-quantised weight. */
    public static TensorSpec scaleOf(TensorSpec weight) {
        return new TensorSpec(
                scaleName(weight.name()), scaleShape(weight.shape()), DType.F32, DType.F32);
    }

    public static long blocks(long n) {
        return (n + BLOCK - 1) / BLOCK;
    }

    /**
     * Scale tensor name to its weight's index in {@code tensors}, for every block-quantised tensor.
     * Checks the convention: each such tensor is 2-D and its scale tensor is present with F32 in
     * both dtypes and the block shape.
     *
     * @throws IllegalArgumentException naming the tensor that breaks it
     */
    public static Map<String, Integer> weightOfScale(List<TensorSpec> tensors) {
        Map<String, TensorSpec> byName = new HashMap<>(tensors.size() * 2);
        for (TensorSpec t : tensors) {
            byName.put(t.name(), t);
        }
        Map<String, Integer> out = new HashMap<>();
        for (int i = 0; i < tensors.size(); i++) {
            TensorSpec t = tensors.get(i);
            if (!quantized(t)) {
                continue;
            }
            if (t.shape().rank() != 2) {
                throw new IllegalArgumentException(
                        "tensor "
                                + t.name()
                                + ": block FP8 needs a 2-D tensor, its shape is "
                                + t.shape());
            }
            TensorSpec want = scaleOf(t);
            TensorSpec scale = byName.get(want.name());
            if (scale == null) {
                throw new IllegalArgumentException(
                        "tensor "
                                + t.name()
                                + ": "
                                + t.trainerDtype()
                                + " -> F8_E4M3 needs its block scales, tensor "
                                + want.name()
                                + " "
                                + want.shape()
                                + " F32, in the manifest");
            }
            if (!scale.equals(want)) {
                throw new IllegalArgumentException(
                        "tensor "
                                + scale.name()
                                + " holds the block scales of "
                                + t.name()
                                + ": it must be "
                                + want.shape()
                                + " F32 -> F32, not "
                                + scale.shape()
                                + " "
                                + scale.trainerDtype()
                                + " -> "
                                + scale.rolloutDtype());
            }
            out.put(scale.name(), i);
        }
        return out;
    }

    /**
     * The box of the scale tensor a worker holding the weight box {@code (offset, shape)} needs:
     * every block the box touches, {@code [floor(lo / 128), ceil(hi / 128))} in each dimension. For
     * shards on block boundaries (what vLLM and SGLang require of block-FP8 tensor parallelism) the
     * scale boxes of the shards tile the scale tensor; otherwise neighbours share the boundary
     * block's scale.
     */
    public static Shape[] scaleBox(Shape offset, Shape shape) {
        if (offset.rank() != 2 || shape.rank() != 2) {
            throw new IllegalArgumentException("block scales need a 2-D box, not " + shape);
        }
        long[] lo = new long[2];
        long[] ext = new long[2];
        for (int d = 0; d < 2; d++) {
            lo[d] = offset.dim(d) / BLOCK;
            ext[d] = shape.dim(d) == 0 ? 0 : blocks(offset.dim(d) + shape.dim(d)) - lo[d];
        }
        return new Shape[] {Shape.of(lo), Shape.of(ext)};
    }

    /** Whether a dim-0 row range [start, end) of a weight with {@code rows} rows is whole bands. */
    public static boolean wholeBands(long start, long end, long rows) {
        return start % BLOCK == 0 && (end % BLOCK == 0 || end == rows);
    }

    /**
     * Fragments of a block-quantised weight: whole 128-row bands, each at most {@code
     * maxFragmentBytes} unless one band is larger, spread evenly.
     */
    static List<StoredFragment> weightFragments(TensorSpec weight, long maxFragmentBytes) {
        long rows = weight.shape().dim(0);
        long cols = weight.shape().dim(1);
        long rowBytes = Math.multiplyExact(cols, (long) weight.rolloutDtype().bytes());
        long bands = blocks(rows);
        if (bands <= 1 || rowBytes == 0) {
            return List.of(
                    new StoredFragment(
                            weight.name() + "@0",
                            weight.name(),
                            Shape.zeros(2),
                            weight.shape(),
                            weight.bytes()));
        }
        long bandsPerFragment = Math.max(1, maxFragmentBytes / Math.multiplyExact(rowBytes, BLOCK));
        long pieces = (bands + bandsPerFragment - 1) / bandsPerFragment;
        long base = bands / pieces;
        long extra = bands % pieces;
        List<StoredFragment> out = new ArrayList<>((int) pieces);
        long row = 0;
        for (int i = 0; i < pieces; i++) {
            long end = Math.min(rows, row + (base + (i < extra ? 1 : 0)) * BLOCK);
            out.add(
                    new StoredFragment(
                            weight.name() + "@" + i,
                            weight.name(),
                            Shape.of(row, 0),
                            Shape.of(end - row, cols),
                            (end - row) * rowBytes));
            row = end;
        }
        return out;
    }

    /** The scale fragment holding the scale rows of one weight fragment. */
    public static StoredFragment scaleFragmentOf(
            TensorSpec weight, StoredFragment weightFragment, int index) {
        long start = weightFragment.offset().dim(0);
        long end = start + weightFragment.shape().dim(0);
        long firstBand = start / BLOCK;
        long bands = blocks(end) - firstBand;
        long colBlocks = blocks(weight.shape().dim(1));
        String scale = scaleName(weight.name());
        return new StoredFragment(
                scale + "@" + index,
                scale,
                Shape.of(firstBand, 0),
                Shape.of(bands, colBlocks),
                Math.multiplyExact(bands * colBlocks, 4L));
    }

    /**
     * Checks that every fragment of a block-quantised tensor is whole bands of full rows and that
     * its scale tensor's fragments are exactly one per weight fragment with its scale rows.
     */
    static void checkFragments(
            List<TensorSpec> tensors,
            List<List<StoredFragment>> byTensor,
            Map<String, Integer> index) {
        for (Map.Entry<String, Integer> e : weightOfScale(tensors).entrySet()) {
            TensorSpec weight = tensors.get(e.getValue());
            List<StoredFragment> scales = byTensor.get(index.get(e.getKey()));
            Map<Long, StoredFragment> scaleByBand = new HashMap<>();
            for (StoredFragment s : scales) {
                scaleByBand.put(s.offset().dim(0), s);
            }
            List<StoredFragment> parts = byTensor.get(e.getValue());
            for (StoredFragment f : parts) {
                long start = f.offset().dim(0);
                long end = start + f.shape().dim(0);
                if (f.offset().dim(1) != 0
                        || f.shape().dim(1) != weight.shape().dim(1)
                        || !wholeBands(start, end, weight.shape().dim(0))) {
                    throw new IllegalArgumentException(
                            "tensor "
                                    + weight.name()
                                    + ": fragment "
                                    + f.fragment()
                                    + " is not whole 128-row bands of full rows");
                }
            }
            if (parts.size() != scales.size()) {
                throw new IllegalArgumentException(
                        "tensor "
                                + e.getKey()
                                + ": "
                                + scales.size()
                                + " fragments, its weight "
                                + weight.name()
                                + " has "
                                + parts.size()
                                + "; each weight fragment has one scale fragment");
            }
            for (StoredFragment f : parts) {
                StoredFragment want = scaleFragmentOf(weight, f, 0);
                StoredFragment got = scaleByBand.get(want.offset().dim(0));
                if (got == null
                        || !got.offset().equals(want.offset())
                        || !got.shape().equals(want.shape())) {
                    throw new IllegalArgumentException(
                            "tensor "
                                    + e.getKey()
                                    + ": no fragment holds scale rows "
                                    + want.offset().dim(0)
                                    + " to "
                                    + (want.offset().dim(0) + want.shape().dim(0))
                                    + " of weight fragment "
                                    + f.fragment());
                }
            }
        }
    }
}
