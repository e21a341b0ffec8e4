package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.Worker;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.function.Function;

/** Checks every byte a worker should hold against {@link GenerationContent}. */
final class BufferVerifier {
    private final SourceManifest manifest;
    private final GenerationContent content;
    private final Map<String, Integer> tensorIndex;

    BufferVerifier(SourceManifest manifest, GenerationContent content) {
        this.manifest = manifest;
        this.content = content;
        this.tensorIndex = manifest.tensorIndex();
    }

    /**
     * @param view the bytes of a segment by name
     * @return bytes verified
     * @throws AssertionError at the first wrong byte, naming worker, tensor and offset
     */
    long verify(Worker worker, BufferDirectory directory, Function<String, ByteBuffer> view) {
        if (worker.mode() == Mode.COMPAT) {
            BufferDirectory.Placed image = directory.require(worker.id(), Worker.COMPAT_BUFFER);
            ByteBuffer bytes = view.apply(image.segment());
            SafetensorsLayout layout = SafetensorsLayout.of(manifest);
            byte[] header = layout.headerBytes();
            for (int i = 0; i < header.length; i++) {
                if (bytes.get((int) image.base() + i) != header[i]) {
                    throw new AssertionError(worker.id() + ": safetensors header differs at " + i);
                }
            }
            long checked = header.length;
            for (int t = 0; t < manifest.tensors().size(); t++) {
                long length = manifest.tensors().get(t).bytes();
                int pos = (int) (image.base() + layout.tensorOffset(t));
                check(worker, t, 0, bytes, pos, (int) length);
                checked += length;
            }
            return checked;
        }
        long checked = 0;
        for (TargetFragment f : worker.fragments()) {
            BufferDirectory.Placed placed = directory.require(worker.id(), f.buffer());
            ByteBuffer bytes = view.apply(placed.segment());
            int t = tensorIndex.get(f.tensor());
            TensorSpec spec = manifest.tensors().get(t);
            int elt = spec.rolloutDtype().bytes();
            long[] tStride = Boxes.contiguousStrides(spec.shape(), elt);
            int rank = f.shape().rank();
            if (f.shape().numel() == 0) {
                continue;
            }
            if (rank == 0) {
                check(worker, t, 0, bytes, (int) (placed.base() + f.bufferOffset()), elt);
                checked += elt;
                continue;
            }
            long rowLen = f.shape().dim(rank - 1);
            long[] idx = new long[rank - 1];
            while (true) {
                long tIdx = (f.offset().dim(rank - 1)) * tStride[rank - 1];
                long bPos = placed.base() + f.bufferOffset();
                for (int d = 0; d < rank - 1; d++) {
                    tIdx += (f.offset().dim(d) + idx[d]) * tStride[d];
                    bPos += idx[d] * f.strides().dim(d);
                }
                if (f.strides().dim(rank - 1) == elt) {
                    check(worker, t, tIdx, bytes, (int) bPos, (int) (rowLen * elt));
                } else {
                    for (long c = 0; c < rowLen; c++) {
                        check(
                                worker,
                                t,
                                tIdx + c * elt,
                                bytes,
                                (int) (bPos + c * f.strides().dim(rank - 1)),
                                elt);
                    }
                }
                checked += rowLen * elt;
                int d = rank - 2;
                while (d >= 0 && ++idx[d] == f.shape().dim(d)) {
                    idx[d] = 0;
                    d--;
                }
                if (d < 0) {
                    break;
                }
            }
        }
        return checked;
    }

    private void check(
            Worker worker, int tensor, long index, ByteBuffer bytes, int pos, int length) {
        long bad = content.firstMismatch(tensor, index, bytes, pos, length);
        if (bad >= 0) {
            throw new AssertionError(
                    worker.id()
                            + ": tensor "
                            + manifest.tensors().get(tensor).name()
                            + " differs at byte "
                            + (index + bad));
        }
    }
}
