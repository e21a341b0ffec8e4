package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

/**
 * Runs a plan on real bytes, loader by loader, from decoded slices only ({@link SliceExecution}): a
 * store filled with random objects, one staging buffer per read (pre-filled with a poison byte so
 * unread bytes show), one-sided writes into peers' buffers, then per batch the delegates' fan-out.
 * Then checks every registered byte against the source tensors, element by element.
 */
final class ByteWorld extends SliceExecution<byte[]> {
    private static final byte POISON = (byte) 0xA5;

    final Map<String, byte[]> store = new HashMap<>();
    final Map<String, Map<String, byte[]>> buffers = new HashMap<>();
    final Map<String, byte[]> tensors = new HashMap<>();

    static ByteWorld run(Plan plan, SourceManifest manifest, TargetPlacement placement, long seed) {
        ByteWorld world = new ByteWorld();
        Random random = new Random(seed);
        for (TensorSpec t : manifest.tensors()) {
            byte[] bytes = new byte[(int) t.bytes()];
            random.nextBytes(bytes);
            world.tensors.put(t.name(), bytes);
        }
        Map<String, TensorSpec> specs = new HashMap<>();
        manifest.tensors().forEach(t -> specs.put(t.name(), t));
        for (StoredFragment f : manifest.fragments()) {
            TensorSpec spec = specs.get(f.tensor());
            byte[] object = new byte[(int) f.bytes()];
            int elt = spec.rolloutDtype().bytes();
            long[] idx = new long[f.shape().rank()];
            for (long e = 0; e < f.shape().numel(); e++) {
                unravel(e, f.shape().dims(), idx);
                long[] coord = new long[idx.length];
                for (int d = 0; d < idx.length; d++) {
                    coord[d] = idx[d] + f.offset().dim(d);
                }
                long src = linear(coord, spec.shape().dims()) * elt;
                System.arraycopy(
                        world.tensors.get(spec.name()), (int) src, object, (int) (e * elt), elt);
            }
            world.store.put(f.fragment(), object);
        }
        SafetensorsLayout layout = SafetensorsLayout.of(manifest);
        for (Worker w : placement.workers()) {
            Map<String, byte[]> mine = new HashMap<>();
            if (w.mode() == Mode.COMPAT) {
                byte[] image = new byte[(int) layout.imageBytes()];
                Arrays.fill(image, POISON);
                mine.put(Worker.COMPAT_BUFFER, image);
            } else {
                Map<String, Long> size = new HashMap<>();
                for (TargetFragment f : w.fragments()) {
                    size.merge(f.buffer(), end(f), Math::max);
                }
                size.forEach(
                        (k, v) -> {
                            byte[] b = new byte[(int) (long) v];
                            Arrays.fill(b, POISON);
                            mine.put(k, b);
                        });
            }
            world.buffers.put(w.id(), mine);
        }
        world.execute(plan, placement);
        return world;
    }

    private static long end(TargetFragment f) {
        long last = f.bufferOffset();
        for (int d = 0; d < f.shape().rank(); d++) {
            if (f.shape().dim(d) == 0) {
                return f.bufferOffset();
            }
            last += (f.shape().dim(d) - 1) * f.strides().dim(d);
        }
        return last + f.dtype().bytes();
    }

    @Override
    protected byte[] object(String fragment) {
        return store.get(fragment);
    }

    @Override
    protected byte[] buffer(String worker, String buffer) {
        return buffers.get(worker).get(buffer);
    }

    @Override
    protected byte[] staging(int length) {
        byte[] staging = new byte[length];
        Arrays.fill(staging, POISON);
        return staging;
    }

    /** Every registered byte, checked against the source tensor; returns the first mismatch. */
    String firstMismatch(SourceManifest manifest, TargetPlacement placement) {
        SafetensorsLayout layout = SafetensorsLayout.of(manifest);
        Map<String, TensorSpec> specs = new HashMap<>();
        manifest.tensors().forEach(t -> specs.put(t.name(), t));
        for (Worker w : placement.workers()) {
            if (w.mode() == Mode.COMPAT) {
                byte[] image = buffers.get(w.id()).get(Worker.COMPAT_BUFFER);
                for (int t = 0; t < manifest.tensors().size(); t++) {
                    TensorSpec spec = manifest.tensors().get(t);
                    byte[] want = tensors.get(spec.name());
                    byte[] got =
                            Arrays.copyOfRange(
                                    image,
                                    (int) layout.tensorOffset(t),
                                    (int) (layout.tensorOffset(t) + want.length));
                    if (!Arrays.equals(want, got)) {
                        return "worker "
                                + w.id()
                                + " tensor "
                                + spec.name()
                                + " image bytes differ";
                    }
                }
                continue;
            }
            for (TargetFragment f : w.fragments()) {
                TensorSpec spec = specs.get(f.tensor());
                int elt = spec.rolloutDtype().bytes();
                byte[] buffer = buffers.get(w.id()).get(f.buffer());
                long[] idx = new long[f.shape().rank()];
                for (long e = 0; e < f.shape().numel(); e++) {
                    unravel(e, f.shape().dims(), idx);
                    long[] coord = new long[idx.length];
                    long dst = f.bufferOffset();
                    for (int d = 0; d < idx.length; d++) {
                        coord[d] = idx[d] + f.offset().dim(d);
                        dst += idx[d] * f.strides().dim(d);
                    }
                    long src = linear(coord, spec.shape().dims()) * elt;
                    for (int b = 0; b < elt; b++) {
                        if (buffer[(int) dst + b] != tensors.get(spec.name())[(int) src + b]) {
                            return "worker "
                                    + w.id()
                                    + " tensor "
                                    + spec.name()
                                    + " element "
                                    + Arrays.toString(coord)
                                    + " differs";
                        }
                    }
                }
            }
        }
        return null;
    }

    static void unravel(long index, long[] shape, long[] out) {
        for (int d = shape.length - 1; d >= 0; d--) {
            out[d] = index % shape[d];
            index /= shape[d];
        }
    }

    static long linear(long[] coord, long[] shape) {
        long index = 0;
        for (int d = 0; d < shape.length; d++) {
            index = index * shape[d] + coord[d];
        }
        return index;
    }
}
