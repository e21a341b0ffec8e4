package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.plan.Slice;
import java.util.function.IntToLongFunction;

/** Expands a slice write (a contiguous run repeated by outer loops) into contiguous copies. */
final class Runs {

    /** Receives one contiguous copy: source offset in the read span, destination offset, length. */
    @FunctionalInterface
    interface Sink {
        void run(long src, long dst, long length);
    }

    private Runs() {}

    /**
     * Calls the sink once per contiguous copy of one of the slice's writes, merging neighbours that
     * are contiguous on both sides (a loop whose strides equal the run length collapses into one
     * copy).
     */
    static void forEach(Slice slice, int write, Sink sink) {
        forEach(
                slice.loopFirst(write),
                slice.loopEnd(write),
                slice.writeLength(write),
                slice.writeSrc(write),
                slice.writeDstOffset(write),
                slice::loopCount,
                slice::loopSrcStride,
                slice::loopDstStride,
                sink);
    }

    /**
     * The same for a write the slice's workers receive; it has destination offsets only, so the
     * sink's source offset is the destination offset (a delegate copies its bytes to the same place
     * in its peers' buffers).
     */
    static void forEachReceived(Slice slice, int receive, Sink sink) {
        forEach(
                slice.receiveLoopFirst(receive),
                slice.receiveLoopEnd(receive),
                slice.receiveLength(receive),
                slice.receiveDstOffset(receive),
                slice.receiveDstOffset(receive),
                slice::receiveLoopCount,
                slice::receiveLoopStride,
                slice::receiveLoopStride,
                sink);
    }

    private static void forEach(
            int first,
            int end,
            long length,
            long src0,
            long dst0,
            IntToLongFunction count,
            IntToLongFunction srcStride,
            IntToLongFunction dstStride,
            Sink sink) {
        int loops = end - first;
        for (int j = 0; j < loops; j++) {
            if (count.applyAsLong(first + j) == 0) {
                return;
            }
        }
        if (loops == 0) {
            sink.run(src0, dst0, length);
            return;
        }
        long[] index = new long[loops];
        long pendingSrc = -1;
        long pendingDst = -1;
        long pendingLength = 0;
        while (true) {
            long src = src0;
            long dst = dst0;
            for (int j = 0; j < loops; j++) {
                src += index[j] * srcStride.applyAsLong(first + j);
                dst += index[j] * dstStride.applyAsLong(first + j);
            }
            if (pendingLength > 0
                    && pendingSrc + pendingLength == src
                    && pendingDst + pendingLength == dst) {
                pendingLength += length;
            } else {
                if (pendingLength > 0) {
                    sink.run(pendingSrc, pendingDst, pendingLength);
                }
                pendingSrc = src;
                pendingDst = dst;
                pendingLength = length;
            }
            int j = loops - 1;
            while (j >= 0 && ++index[j] == count.applyAsLong(first + j)) {
                index[j] = 0;
                j--;
            }
            if (j < 0) {
                break;
            }
        }
        sink.run(pendingSrc, pendingDst, pendingLength);
    }
}
