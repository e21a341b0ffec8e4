package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.plan.Plan;

/** Expands a plan write (a contiguous run repeated by outer loops) into contiguous copies. */
final class Runs {

    /** Receives one contiguous copy: source offset in the read span, destination offset, length. */
    @FunctionalInterface
    interface Sink {
        void run(long src, long dst, long length);
    }

    private Runs() {}

    /**
     * Calls the sink once per contiguous copy of the write, merging neighbours that are contiguous
     * on both sides (a loop whose strides equal the run length collapses into one copy).
     */
    static void forEach(Plan plan, int write, Sink sink) {
        int first = plan.loopFirst(write);
        int loops = plan.loopEnd(write) - first;
        long length = plan.writeLength(write);
        long src0 = plan.writeSrc(write);
        long dst0 = plan.writeDstOffset(write);
        for (int j = 0; j < loops; j++) {
            if (plan.loopCount(first + j) == 0) {
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
                src += index[j] * plan.loopSrcStride(first + j);
                dst += index[j] * plan.loopDstStride(first + j);
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
            while (j >= 0 && ++index[j] == plan.loopCount(first + j)) {
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
