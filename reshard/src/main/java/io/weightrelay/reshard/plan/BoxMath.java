package io.weightrelay.reshard.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Lowering of N-D boxes to byte runs, and the union of boxes as disjoint byte intervals of a stored
 * object. Pure functions over primitive arrays: this is the planner's inner loop.
 */
final class BoxMath {
    private BoxMath() {}

    /**
     * Lowers the box {@code [lo, hi)} (tensor coordinates) of a stored fragment at {@code sOff}
     * with shape {@code sShape} into one run: the longest contiguous inner byte length in both the
     * object and the destination, plus outer loops (outermost first). Writes {@code [srcOffset,
     * dstOffset, innerBytes]} into {@code out} and appends loops to the three loop columns.
     *
     * @return the number of loops appended
     */
    static int lower(
            long[] sOff,
            long[] sStride,
            long[] lo,
            long[] hi,
            long[] tOff,
            long[] tStride,
            long tBase,
            int elementBytes,
            long[] out,
            LongList loopCount,
            LongList loopSrc,
            LongList loopDst) {
        int rank = lo.length;
        long src = 0;
        long dst = tBase;
        for (int d = 0; d < rank; d++) {
            src += (lo[d] - sOff[d]) * sStride[d];
            dst += (lo[d] - tOff[d]) * tStride[d];
        }
        long inner = elementBytes;
        int d = rank - 1;
        while (d >= 0 && sStride[d] == inner && tStride[d] == inner) {
            inner *= hi[d] - lo[d];
            d--;
        }
        out[0] = src;
        out[1] = dst;
        out[2] = inner;
        int start = loopCount.size();
        for (int k = 0; k <= d; k++) {
            long count = hi[k] - lo[k];
            if (count == 1) {
                continue;
            }
            int last = loopCount.size() - 1;
            if (last >= start
                    && loopSrc.get(last) == count * sStride[k]
                    && loopDst.get(last) == count * tStride[k]) {
                // The previous (outer) loop steps exactly over this one: fold them together.
                loopCount.set(last, loopCount.get(last) * count);
                loopSrc.set(last, sStride[k]);
                loopDst.set(last, tStride[k]);
                continue;
            }
            loopCount.add(count);
            loopSrc.add(sStride[k]);
            loopDst.add(tStride[k]);
        }
        return loopCount.size() - start;
    }

    /**
     * Appends to {@code out} the union of the boxes, as sorted, disjoint, non-adjacent byte
     * intervals {@code [start, end)} relative to the object's first byte. Boxes are given in
     * object-local coordinates.
     */
    static void union(
            List<long[][]> boxes, long[] sShape, long[] sStride, long objectBytes, LongList out) {
        if (sShape.length == 0) {
            if (!boxes.isEmpty()) {
                emit(out, 0, objectBytes);
            }
            return;
        }
        union(boxes, sShape, sStride, 0, 0, out);
    }

    private static void union(
            List<long[][]> boxes, long[] sShape, long[] sStride, int dim, long base, LongList out) {
        int rank = sShape.length;
        if (dim == rank - 1) {
            long[][] intervals = new long[boxes.size()][];
            for (int i = 0; i < intervals.length; i++) {
                intervals[i] = new long[] {boxes.get(i)[0][dim], boxes.get(i)[1][dim]};
            }
            Arrays.sort(intervals, (a, b) -> Long.compare(a[0], b[0]));
            for (long[] iv : intervals) {
                if (iv[1] > iv[0]) {
                    emit(out, base + iv[0] * sStride[dim], base + iv[1] * sStride[dim]);
                }
            }
            return;
        }
        long[] cuts = new long[boxes.size() * 2];
        for (int i = 0; i < boxes.size(); i++) {
            cuts[2 * i] = boxes.get(i)[0][dim];
            cuts[2 * i + 1] = boxes.get(i)[1][dim];
        }
        Arrays.sort(cuts);
        long rowBytes = sStride[dim];
        LongList sub = new LongList(8);
        List<long[][]> active = new ArrayList<>(boxes.size());
        for (int c = 0; c + 1 < cuts.length; c++) {
            long a = cuts[c];
            long b = cuts[c + 1];
            if (a == b) {
                continue;
            }
            active.clear();
            boolean full = false;
            for (long[][] box : boxes) {
                if (box[0][dim] <= a && box[1][dim] >= b) {
                    active.add(box);
                    full |= coversInner(box, sShape, dim + 1);
                }
            }
            if (active.isEmpty()) {
                continue;
            }
            if (!full) {
                sub.clear();
                union(active, sShape, sStride, dim + 1, 0, sub);
                full = sub.size() == 2 && sub.get(0) == 0 && sub.get(1) == rowBytes;
            }
            if (full) {
                emit(out, base + a * rowBytes, base + b * rowBytes);
            } else {
                for (long row = a; row < b; row++) {
                    for (int k = 0; k < sub.size(); k += 2) {
                        emit(
                                out,
                                base + row * rowBytes + sub.get(k),
                                base + row * rowBytes + sub.get(k + 1));
                    }
                }
            }
        }
    }

    private static boolean coversInner(long[][] box, long[] sShape, int fromDim) {
        for (int d = fromDim; d < sShape.length; d++) {
            if (box[0][d] != 0 || box[1][d] != sShape[d]) {
                return false;
            }
        }
        return true;
    }

    /** Appends an interval, merging it with the previous one when they touch or overlap. */
    private static void emit(LongList out, long start, long end) {
        int n = out.size();
        if (n > 0 && out.get(n - 1) >= start) {
            if (end > out.get(n - 1)) {
                out.set(n - 1, end);
            }
            return;
        }
        out.add(start);
        out.add(end);
    }
}
