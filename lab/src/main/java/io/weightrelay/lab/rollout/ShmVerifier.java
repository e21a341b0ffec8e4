package io.weightrelay.lab.rollout;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.PlacedBuffer;
import io.weightrelay.reshard.convert.BlockFp8;
import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.testkit.sim.DeterministicWeights;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Maps an instance's receive buffers (the shared-memory files the loader registered) the way an
 * engine's loader would, and checks every byte against the trainer's deterministic generator.
 * Compat workers: the safetensors header, then every tensor whole at its header offset. Direct
 * workers: every element of every registered shard at its offset and strides.
 *
 * <p>A block-FP8 weight (rollout dtype {@code F8_E4M3} from a floating-point trainer dtype) and its
 * {@code _scale_inv} tensor are expected as the publisher makes them from the trainer's bytes:
 * reshard's {@link BlockFp8}, the publisher's own conversion, run here on the generated source (one
 * weight at a time, so a weight must fit one buffer, 2 GiB).
 *
 * <p>One verifier may check several instances of a generation: the first copy of an image, or of a
 * shard in one layout, is checked against the generator, and every later copy byte for byte against
 * that checked one (the same proof, without generating the same bytes again).
 */
public final class ShmVerifier {
    private static final int CHUNK = 4 << 20;

    private final SourceManifest manifest;
    private final DeterministicWeights weights;
    private final Map<String, Integer> tensorIndex;
    private final ByteBuffer expected = ByteBuffer.allocate(CHUNK);

    /** Where a copy already checked against the generator lies: its bytes from {@code start}. */
    private record Checked(ByteBuffer bytes, long start) {}

    /** A shard as a worker holds it: which elements, laid out how. */
    private record ShardKey(
            String tensor, List<Long> offset, List<Long> shape, List<Long> strides) {}

    private Checked image;
    private final Map<ShardKey, Checked> shards = new HashMap<>();

    /** Index of each block-FP8 scale tensor to its weight's index. */
    private final Map<Integer, Integer> weightOfScale = new HashMap<>();

    /** The block-FP8 weight converted last ({@code -1}: none), its E4M3 bytes and its scales. */
    private int convertedWeight = -1;

    private ByteBuffer convertedCodes;
    private ByteBuffer convertedScales;

    public ShmVerifier(SourceManifest manifest, long seed, long generation) {
        this.manifest = manifest;
        this.weights = new DeterministicWeights(seed, generation);
        this.tensorIndex = manifest.tensorIndex();
        BlockScales.weightOfScale(manifest.tensors())
                .forEach((scale, weight) -> weightOfScale.put(tensorIndex.get(scale), weight));
        for (TensorSpec t : manifest.tensors()) {
            if (t.trainerDtype() != t.rolloutDtype() && !BlockScales.quantized(t)) {
                throw new IllegalArgumentException(
                        "verification needs trainer dtype == rollout dtype, or a block-FP8 weight"
                                + " ("
                                + t.name()
                                + ")");
            }
        }
    }

    /** Verifies every worker of the instance; returns the bytes checked. */
    public long verify(InstanceStatus status) {
        return verify(status, false);
    }

    /**
     * Verifies what the instance's engine serves from on the loader's side, for an engine whose
     * last update did not end {@code UPDATED}: each direct worker's serving buffers ({@code
     * servingShmPath}: the receive buffer itself in place, the serving copy a staged install
     * writes). A compat worker's image is not among them: its engine serves the copy it loaded from
     * the image at its last {@code UPDATED} and loads it again only at the next, so bytes a failed
     * update left in the image are never served. Returns the bytes checked.
     */
    public long verifyServing(InstanceStatus status) {
        return verify(status, true);
    }

    private long verify(InstanceStatus status, boolean serving) {
        Map<String, ConsumeMode> modes = new HashMap<>();
        for (WorkerPlacement w : status.getWorkers()) {
            modes.put(w.getWorkerId(), w.getMode());
        }
        Map<String, MappedByteBuffer> maps = new HashMap<>();
        Map<String, Map<String, PlacedBuffer>> buffers = new HashMap<>();
        for (PlacedBuffer b : status.getBuffers()) {
            if (serving && modes.get(b.getWorkerId()) == ConsumeMode.COMPAT) {
                continue;
            }
            String path = serving ? b.getServingShmPath() : b.getShmPath();
            if (path == null) {
                throw new IllegalStateException(
                        "buffer "
                                + b.getBufferId()
                                + " of "
                                + b.getWorkerId()
                                + " is not registered");
            }
            maps.computeIfAbsent(path, f -> map(Path.of(f)));
            buffers.computeIfAbsent(b.getWorkerId(), w -> new HashMap<>()).put(b.getBufferId(), b);
        }
        long checked = 0;
        for (WorkerPlacement w : status.getWorkers()) {
            if (serving && w.getMode() == ConsumeMode.COMPAT) {
                continue;
            }
            Map<String, PlacedBuffer> mine = buffers.get(w.getWorkerId());
            if (w.getFragments() == null || w.getFragments().isEmpty()) {
                PlacedBuffer image = mine.values().iterator().next();
                checked +=
                        verifyImage(
                                w.getWorkerId(),
                                maps.get(pathOf(image, serving)),
                                image.getOffset());
            } else {
                for (TargetFragment f : w.getFragments()) {
                    PlacedBuffer b = mine.get(f.getBufferId());
                    checked +=
                            verifyFragment(
                                    w.getWorkerId(),
                                    maps.get(pathOf(b, serving)),
                                    b.getOffset(),
                                    f);
                }
            }
        }
        return checked;
    }

    private static String pathOf(PlacedBuffer b, boolean serving) {
        return serving ? b.getServingShmPath() : b.getShmPath();
    }

    private static MappedByteBuffer map(Path path) {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map " + path, e);
        }
    }

    private long verifyImage(String worker, ByteBuffer bytes, long base) {
        SafetensorsLayout layout = SafetensorsLayout.of(manifest);
        if (image != null) {
            same(worker, "its safetensors image", 0, layout.imageBytes(), bytes, base, image);
            return layout.imageBytes();
        }
        byte[] header = layout.headerBytes();
        for (int i = 0; i < header.length; i++) {
            if (bytes.get((int) base + i) != header[i]) {
                throw new AssertionError(worker + ": safetensors header differs at byte " + i);
            }
        }
        long checked = header.length;
        List<TensorSpec> tensors = manifest.tensors();
        for (int t = 0; t < tensors.size(); t++) {
            compare(worker, t, 0, tensors.get(t).bytes(), bytes, base + layout.tensorOffset(t));
            checked += tensors.get(t).bytes();
        }
        image = new Checked(bytes, base);
        return checked;
    }

    private long verifyFragment(String worker, ByteBuffer bytes, long base, TargetFragment f) {
        int t = tensorIndex.get(f.getTensor());
        TensorSpec spec = manifest.tensors().get(t);
        int elt = spec.rolloutDtype().bytes();
        long[] tStride = Boxes.contiguousStrides(spec.shape(), elt);
        List<Long> offset = f.getOffset();
        List<Long> shape = f.getShape();
        List<Long> strides = f.getStrides();
        int rank = shape.size();
        long numel = 1;
        for (long d : shape) {
            numel *= d;
        }
        if (numel == 0) {
            return 0;
        }
        long start = base + f.getBufferOffset();
        ShardKey key = new ShardKey(f.getTensor(), offset, shape, strides);
        Checked before = shards.get(key);
        if (before == null) {
            shards.put(key, new Checked(bytes, start));
        }
        if (rank == 0) {
            if (before != null) {
                same(worker, spec.name(), 0, elt, bytes, start, before);
                return elt;
            }
            compare(worker, t, 0, elt, bytes, start);
            return elt;
        }
        // Rows of contiguous innermost elements where the buffer lays them out densely; element
        // by element where it does not (a padded or transposed innermost stride).
        boolean contiguous = strides.get(rank - 1) == elt;
        int outer = contiguous ? rank - 1 : rank;
        long row = contiguous ? shape.get(rank - 1) * elt : elt;
        long[] idx = new long[outer];
        long checked = 0;
        while (true) {
            long tensorByte = contiguous ? offset.get(rank - 1) * tStride[rank - 1] : 0;
            long pos = start;
            for (int d = 0; d < outer; d++) {
                tensorByte += (offset.get(d) + idx[d]) * tStride[d];
                pos += idx[d] * strides.get(d);
            }
            if (before != null) {
                same(worker, spec.name(), pos - start, row, bytes, pos, before);
            } else {
                compare(worker, t, tensorByte, row, bytes, pos);
            }
            checked += row;
            int d = outer - 1;
            while (d >= 0 && ++idx[d] == shape.get(d)) {
                idx[d] = 0;
                d--;
            }
            if (d < 0) {
                return checked;
            }
        }
    }

    /** Compares {@code length} bytes of tensor {@code t} from {@code from} with the buffer. */
    private void compare(String worker, int t, long from, long length, ByteBuffer bytes, long pos) {
        TensorSpec spec = manifest.tensors().get(t);
        ByteBuffer converted = converted(t);
        long done = 0;
        while (done < length) {
            int n = (int) Math.min(CHUNK, length - done);
            ByteBuffer want;
            if (converted != null) {
                want = converted.slice((int) (from + done), n);
            } else {
                expected.clear().limit(n);
                weights.write(t, spec, from + done, expected);
                want = expected.slice(0, n);
            }
            ByteBuffer got = bytes.slice((int) (pos + done), n);
            int mismatch = got.mismatch(want);
            if (mismatch >= 0) {
                throw new AssertionError(
                        worker
                                + ": tensor "
                                + spec.name()
                                + " differs at byte "
                                + (from + done + mismatch));
            }
            done += n;
        }
    }

    /**
     * The rollout bytes of tensor {@code t} when the publisher converts them to block FP8 (the E4M3
     * bytes of a weight, or the scales of a scale tensor), else null: the trainer's bytes are the
     * rollout bytes.
     */
    private ByteBuffer converted(int t) {
        Integer scaleOf = weightOfScale.get(t);
        int weight = scaleOf != null ? scaleOf : t;
        TensorSpec spec = manifest.tensors().get(weight);
        if (scaleOf == null && !BlockScales.quantized(spec)) {
            return null;
        }
        if (convertedWeight != weight) {
            long rows = spec.shape().dim(0);
            long cols = spec.shape().dim(1);
            long sourceBytes = spec.shape().numel() * spec.trainerDtype().bytes();
            if (sourceBytes > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(
                        "block-FP8 weight "
                                + spec.name()
                                + " has "
                                + sourceBytes
                                + " bytes; the verifier converts one weight in one buffer");
            }
            ByteBuffer source =
                    ByteBuffer.allocate((int) sourceBytes).order(ByteOrder.LITTLE_ENDIAN);
            weights.write(weight, spec, 0, source);
            source.clear();
            convertedCodes = ByteBuffer.allocate((int) spec.shape().numel());
            convertedScales =
                    ByteBuffer.allocate((int) BlockFp8.scaleBytes(rows, cols))
                            .order(ByteOrder.LITTLE_ENDIAN);
            BlockFp8.convert(
                    source, convertedCodes, convertedScales, spec.trainerDtype(), rows, cols);
            convertedWeight = weight;
        }
        return scaleOf != null ? convertedScales : convertedCodes;
    }

    /**
     * Compares {@code length} bytes of the buffer from {@code pos} with the checked copy's bytes
     * {@code relative} bytes after its start.
     */
    private static void same(
            String worker,
            String what,
            long relative,
            long length,
            ByteBuffer bytes,
            long pos,
            Checked checked) {
        long done = 0;
        while (done < length) {
            int n = (int) Math.min(CHUNK, length - done);
            ByteBuffer got = bytes.slice((int) (pos + done), n);
            ByteBuffer want = checked.bytes().slice((int) (checked.start() + relative + done), n);
            int mismatch = got.mismatch(want);
            if (mismatch >= 0) {
                throw new AssertionError(
                        worker
                                + ": "
                                + what
                                + " differs at byte "
                                + (relative + done + mismatch)
                                + " from the copy already checked");
            }
            done += n;
        }
    }
}
