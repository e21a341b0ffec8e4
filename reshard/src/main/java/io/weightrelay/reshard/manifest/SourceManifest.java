package io.weightrelay.reshard.manifest;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a generation stores: the tensors, in the order the trainer iterates them (which is also the
 * tensor order of compatibility-mode safetensors images), and the stored fragments. The constructor
 * fails closed unless the fragments of every tensor tile it exactly (one stored copy of every byte)
 * and every fragment's size matches its box.
 *
 * @param model model name, the first part of every store key
 * @param tensors tensors in iteration order, unique names
 * @param fragments stored objects, unique fragment ids
 * @param hints optional segment-location hints, not part of the digest
 */
public record SourceManifest(
        String model,
        List<TensorSpec> tensors,
        List<StoredFragment> fragments,
        List<SegmentHint> hints) {

    private static final String MAGIC = "wr.manifest.v1";

    public SourceManifest {
        Objects.requireNonNull(model, "model");
        if (model.isEmpty() || model.contains("/")) {
            throw new IllegalArgumentException(
                    "model name must be non-empty without '/': " + model);
        }
        tensors = List.copyOf(tensors);
        fragments = List.copyOf(fragments);
        hints = List.copyOf(hints);
        checkTiling(tensors, fragments);
    }

    public SourceManifest(String model, List<TensorSpec> tensors, List<StoredFragment> fragments) {
        this(model, tensors, fragments, List.of());
    }

    /** Tensor name to index in {@link #tensors()}. */
    public Map<String, Integer> tensorIndex() {
        Map<String, Integer> index = new HashMap<>(tensors.size() * 2);
        for (int i = 0; i < tensors.size(); i++) {
            index.put(tensors.get(i).name(), i);
        }
        return index;
    }

    public long totalBytes() {
        long total = 0;
        for (TensorSpec t : tensors) {
            total += t.bytes();
        }
        return total;
    }

    private static void checkTiling(List<TensorSpec> tensors, List<StoredFragment> fragments) {
        Map<String, Integer> index = new HashMap<>(tensors.size() * 2);
        for (int i = 0; i < tensors.size(); i++) {
            if (index.put(tensors.get(i).name(), i) != null) {
                throw new IllegalArgumentException("duplicate tensor " + tensors.get(i).name());
            }
        }
        List<List<StoredFragment>> byTensor = new ArrayList<>(tensors.size());
        for (int i = 0; i < tensors.size(); i++) {
            byTensor.add(new ArrayList<>(1));
        }
        Map<String, Boolean> ids = new HashMap<>(fragments.size() * 2);
        for (StoredFragment f : fragments) {
            if (ids.put(f.fragment(), Boolean.TRUE) != null) {
                throw new IllegalArgumentException("duplicate fragment " + f.fragment());
            }
            Integer t = index.get(f.tensor());
            if (t == null) {
                throw new IllegalArgumentException(
                        "fragment " + f.fragment() + " names unknown tensor " + f.tensor());
            }
            TensorSpec spec = tensors.get(t);
            if (!Boxes.inside(f.offset(), f.shape(), spec.shape())) {
                throw new IllegalArgumentException(
                        "tensor "
                                + spec.name()
                                + ": fragment "
                                + f.fragment()
                                + " at "
                                + f.offset()
                                + " shape "
                                + f.shape()
                                + " is outside shape "
                                + spec.shape());
            }
            long expected = Math.multiplyExact(f.shape().numel(), spec.rolloutDtype().bytes());
            if (f.bytes() != expected) {
                throw new IllegalArgumentException(
                        "tensor "
                                + spec.name()
                                + ": fragment "
                                + f.fragment()
                                + " has "
                                + f.bytes()
                                + " bytes, its box in "
                                + spec.rolloutDtype()
                                + " needs "
                                + expected);
            }
            byTensor.get(t).add(f);
        }
        for (int t = 0; t < tensors.size(); t++) {
            List<StoredFragment> parts = byTensor.get(t);
            long volume = 0;
            for (StoredFragment f : parts) {
                volume += f.shape().numel();
            }
            if (volume != tensors.get(t).shape().numel()) {
                throw new IllegalArgumentException(
                        "tensor " + tensors.get(t).name() + ": stored fragments do not tile it");
            }
            for (int a = 0; a < parts.size(); a++) {
                for (int b = a + 1; b < parts.size(); b++) {
                    if (Boxes.overlap(
                            parts.get(a).offset(),
                            parts.get(a).shape(),
                            parts.get(b).offset(),
                            parts.get(b).shape())) {
                        throw new IllegalArgumentException(
                                "tensor "
                                        + tensors.get(t).name()
                                        + ": fragments "
                                        + parts.get(a).fragment()
                                        + " and "
                                        + parts.get(b).fragment()
                                        + " overlap");
                    }
                }
            }
        }
        BlockScales.checkFragments(tensors, byTensor, index);
    }

    /** Canonical encoding, hints included. */
    public byte[] encode() {
        ByteSink out = new ByteSink(64 + tensors.size() * 96 + fragments.size() * 96);
        write(out, true);
        return out.toByteArray();
    }

    /** SHA-256 of the canonical encoding without hints: hints never change a plan. */
    public String digest() {
        ByteSink out = ByteSink.sha256();
        write(out, false);
        return out.digestHex();
    }

    private void write(ByteSink out, boolean withHints) {
        out.string(MAGIC).string(model).varInt(tensors.size());
        for (TensorSpec t : tensors) {
            out.string(t.name());
            writeShape(out, t.shape());
            out.string(t.trainerDtype().safetensorsName())
                    .string(t.rolloutDtype().safetensorsName());
        }
        out.varInt(fragments.size());
        for (StoredFragment f : fragments) {
            out.string(f.fragment()).string(f.tensor());
            writeShape(out, f.offset());
            writeShape(out, f.shape());
            out.varLong(f.bytes());
        }
        if (withHints) {
            out.varInt(hints.size());
            for (SegmentHint h : hints) {
                out.string(h.fragment()).string(h.segment());
            }
        } else {
            out.varInt(0);
        }
    }

    public static SourceManifest decode(byte[] bytes) {
        return ByteSource.decode(
                bytes,
                MAGIC,
                in ->
                        new SourceManifest(
                                in.string(),
                                in.list(SourceManifest::readTensor),
                                in.list(SourceManifest::readFragment),
                                in.list(h -> new SegmentHint(h.string(), h.string()))));
    }

    private static TensorSpec readTensor(ByteSource in) {
        return new TensorSpec(
                in.string(), readShape(in), DType.parse(in.string()), DType.parse(in.string()));
    }

    private static StoredFragment readFragment(ByteSource in) {
        return new StoredFragment(
                in.string(), in.string(), readShape(in), readShape(in), in.varLong());
    }

    public static void writeShape(ByteSink out, Shape shape) {
        out.varInt(shape.rank());
        for (int i = 0; i < shape.rank(); i++) {
            out.varLong(shape.dim(i));
        }
    }

    public static Shape readShape(ByteSource in) {
        int rank = in.count();
        long[] dims = new long[rank];
        for (int i = 0; i < rank; i++) {
            dims[i] = in.varLong();
        }
        return new Shape(dims);
    }
}
