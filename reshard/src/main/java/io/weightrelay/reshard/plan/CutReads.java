package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.TargetFragment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The reads of a plan before readers are known: each stored object is cut along dim 0 at demand
 * boundaries and at most {@code readMaxBytes} into reads whose ranges are the union of the demanded
 * bytes (bytes nobody wants are never read). Each read carries its runs: one per consumer of a
 * demanded box, with the buffer, source and destination offsets, length and loops it lowers to.
 */
final class CutReads {
    private final SourceManifest manifest;
    private final DemandIndex demands;
    private final long readMaxBytes;
    private final int[] demandFirst;
    private final long[] demandKey;

    final IntList readObject = new IntList(1024);
    final LongList readStart = new LongList(1024);
    final LongList readSpan = new LongList(1024);
    final IntList readRangeFirst = new IntList(1024);
    final LongList rangeStart = new LongList(1024);
    final LongList rangeLength = new LongList(1024);
    final IntList readRunFirst = new IntList(1024);
    final IntList runEntity;
    final IntList runBuffer;
    final LongList runSrc;
    final LongList runDst;
    final LongList runLength;
    final LongList runBytes;
    final IntList runLoopFirst;
    final LongList loopCount = new LongList(256);
    final LongList loopSrc = new LongList(256);
    final LongList loopDst = new LongList(256);

    CutReads(SourceManifest manifest, DemandIndex demands, long readMaxBytes) {
        this.manifest = manifest;
        this.demands = demands;
        this.readMaxBytes = readMaxBytes;
        this.demandFirst = demands.demandFirst;
        this.demandKey = demands.demandKey;
        // Most demands meet one or two stored fragments: size the run columns once.
        int expected = (int) Math.min(Integer.MAX_VALUE - 16, 2L * demandKey.length + 1024);
        runEntity = new IntList(expected);
        runBuffer = new IntList(expected);
        runLoopFirst = new IntList(expected);
        runSrc = new LongList(expected);
        runDst = new LongList(expected);
        runLength = new LongList(expected);
        runBytes = new LongList(expected);
        cut();
    }

    private void cut() {
        List<StoredFragment> fragments = manifest.fragments();
        List<long[]> hitLo = new ArrayList<>();
        List<long[]> hitHi = new ArrayList<>();
        IntList hitDemand = new IntList(64);
        List<long[][]> boxes = new ArrayList<>();
        LongList ranges = new LongList(16);
        long[] run = new long[3];
        for (int f = 0; f < fragments.size(); f++) {
            StoredFragment sf = fragments.get(f);
            if (sf.bytes() == 0) {
                continue;
            }
            int t = demands.objectTensor[f];
            int elt = manifest.tensors().get(t).rolloutDtype().bytes();
            int rank = sf.shape().rank();
            long[] sOff = sf.offset().dims();
            long[] sShape = sf.shape().dims();
            long[] sStride = Boxes.contiguousStrides(sf.shape(), elt);
            hitLo.clear();
            hitHi.clear();
            hitDemand.clear();
            for (int d = demandFirst[t]; d < demandFirst[t + 1]; ) {
                int group = d;
                int id = (int) (demandKey[d] >>> 32);
                while (d < demandFirst[t + 1] && (int) (demandKey[d] >>> 32) == id) {
                    d++;
                }
                TargetFragment tf = demands.distinct.get(id);
                long[] lo = new long[rank];
                long[] hi = new long[rank];
                boolean empty = false;
                for (int k = 0; k < rank && !empty; k++) {
                    lo[k] = Math.max(sOff[k], tf.offset().dim(k));
                    hi[k] = Math.min(sOff[k] + sShape[k], tf.offset().dim(k) + tf.shape().dim(k));
                    empty = lo[k] >= hi[k];
                }
                if (!empty) {
                    hitLo.add(lo);
                    hitHi.add(hi);
                    hitDemand.add(group);
                    hitDemand.add(d);
                }
            }
            int hits = hitLo.size();
            if (hits == 0) {
                continue;
            }
            if (rank == 0) {
                addRead(f, sf, sOff, sStride, elt, hitLo, hitHi, hitDemand, null, 0, 0, run);
                continue;
            }
            long[] cuts = new long[2 + 2 * hits];
            cuts[0] = sOff[0];
            cuts[1] = sOff[0] + sShape[0];
            for (int h = 0; h < hits; h++) {
                cuts[2 + 2 * h] = hitLo.get(h)[0];
                cuts[3 + 2 * h] = hitHi.get(h)[0];
            }
            Arrays.sort(cuts);
            long rowsPerRead = Math.max(1, readMaxBytes / sStride[0]);
            for (int c = 0; c + 1 < cuts.length; c++) {
                long a = cuts[c];
                long b = cuts[c + 1];
                for (long r = a; r < b; r += rowsPerRead) {
                    long rEnd = Math.min(b, r + rowsPerRead);
                    boxes.clear();
                    for (int h = 0; h < hits; h++) {
                        if (hitLo.get(h)[0] <= r && hitHi.get(h)[0] >= rEnd) {
                            long[] lo = new long[rank];
                            long[] hi = new long[rank];
                            for (int k = 0; k < rank; k++) {
                                lo[k] = hitLo.get(h)[k] - sOff[k];
                                hi[k] = hitHi.get(h)[k] - sOff[k];
                            }
                            lo[0] = r - sOff[0];
                            hi[0] = rEnd - sOff[0];
                            boxes.add(new long[][] {lo, hi});
                        }
                    }
                    if (boxes.isEmpty()) {
                        continue;
                    }
                    ranges.clear();
                    BoxMath.union(boxes, sShape, sStride, sf.bytes(), ranges);
                    addRead(
                            f, sf, sOff, sStride, elt, hitLo, hitHi, hitDemand, ranges, r, rEnd,
                            run);
                }
            }
        }
        readRangeFirst.add(rangeStart.size());
        readRunFirst.add(runEntity.size());
        runLoopFirst.add(loopCount.size());
    }

    int count() {
        return readObject.size();
    }

    /** Bytes a read fetches: the sum of its ranges. */
    long readBytes(int read) {
        long bytes = 0;
        for (int r = readRangeFirst.get(read); r < readRangeFirst.get(read + 1); r++) {
            bytes += rangeLength.get(r);
        }
        return bytes;
    }

    /** Bytes a read's runs deliver. */
    long demandBytes(int read) {
        long bytes = 0;
        for (int r = readRunFirst.get(read); r < readRunFirst.get(read + 1); r++) {
            bytes += runBytes.get(r);
        }
        return bytes;
    }

    private void addRead(
            int object,
            StoredFragment sf,
            long[] sOff,
            long[] sStride,
            int elt,
            List<long[]> hitLo,
            List<long[]> hitHi,
            IntList hitDemand,
            LongList ranges,
            long rowLo,
            long rowHi,
            long[] run) {
        long spanStart;
        long spanEnd;
        readRangeFirst.add(rangeStart.size());
        readRunFirst.add(runEntity.size());
        if (ranges == null) {
            spanStart = 0;
            spanEnd = sf.bytes();
            rangeStart.add(0);
            rangeLength.add(sf.bytes());
        } else {
            spanStart = ranges.get(0);
            spanEnd = ranges.get(ranges.size() - 1);
            for (int k = 0; k < ranges.size(); k += 2) {
                rangeStart.add(ranges.get(k));
                rangeLength.add(ranges.get(k + 1) - ranges.get(k));
            }
        }
        readObject.add(object);
        readStart.add(spanStart);
        readSpan.add(spanEnd - spanStart);
        int rank = sOff.length;
        long[] tOff = new long[rank];
        long[] tStride = new long[rank];
        for (int h = 0; h < hitLo.size(); h++) {
            long[] lo = hitLo.get(h);
            long[] hi = hitHi.get(h);
            if (rank > 0) {
                if (lo[0] > rowLo || hi[0] < rowHi) {
                    continue;
                }
                lo = lo.clone();
                hi = hi.clone();
                lo[0] = rowLo;
                hi[0] = rowHi;
            }
            int groupStart = hitDemand.get(2 * h);
            int groupEnd = hitDemand.get(2 * h + 1);
            int id = (int) (demandKey[groupStart] >>> 32);
            TargetFragment tf = demands.distinct.get(id);
            for (int k = 0; k < rank; k++) {
                tOff[k] = tf.offset().dim(k);
                tStride[k] = tf.strides().dim(k);
            }
            int loopStart = loopCount.size();
            int loops =
                    BoxMath.lower(
                            sOff,
                            sStride,
                            lo,
                            hi,
                            tOff,
                            tStride,
                            tf.bufferOffset(),
                            elt,
                            run,
                            loopCount,
                            loopSrc,
                            loopDst);
            long bytes = run[2];
            for (int l = loopStart; l < loopStart + loops; l++) {
                bytes *= loopCount.get(l);
            }
            for (int d = groupStart; d < groupEnd; d++) {
                if (d > groupStart) {
                    for (int l = loopStart; l < loopStart + loops; l++) {
                        loopCount.add(loopCount.get(l));
                        loopSrc.add(loopSrc.get(l));
                        loopDst.add(loopDst.get(l));
                    }
                }
                runLoopFirst.add(loopCount.size() - loops);
                runEntity.add((int) demandKey[d]);
                runBuffer.add(demands.distinctBuffer.get(id));
                runSrc.add(run[0] - spanStart);
                runDst.add(run[1]);
                runLength.add(run[2]);
                runBytes.add(bytes);
            }
        }
    }
}
