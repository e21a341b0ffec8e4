package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.placement.TargetPlacement;
import java.util.ArrayList;
import java.util.List;

/**
 * A plan run as the loaders run it, from decoded slices only: per batch, every instance's reads
 * (the read's ranges of the stored object into a fresh staging buffer, then its one-sided writes
 * from there into the peers' buffers), then every delegate's fan-out. What the memory holds is the
 * subclass's: {@link ByteWorld} runs it on real bytes, {@link Mooncake3441DifferentialTest.Tagged}
 * on tagged ones.
 *
 * @param <A> the memory: an array of one element per byte ({@code byte[]}, {@code long[]})
 */
abstract class SliceExecution<A> {

    /** Bytes the reads took from the store. */
    long storeBytesRead;

    /** The stored object {@code fragment}. */
    protected abstract A object(String fragment);

    /** Receive buffer {@code buffer} of {@code worker}. */
    protected abstract A buffer(String worker, String buffer);

    /** A staging buffer of {@code length} elements, marked so that unread bytes show. */
    protected abstract A staging(int length);

    /** Runs {@code plan}'s slices of every instance of {@code placement}, batch by batch. */
    final void execute(Plan plan, TargetPlacement placement) {
        List<Slice> slices = new ArrayList<>();
        for (String instance : placement.instances()) {
            slices.add(Slice.decode(Slice.of(plan, instance).encode()));
        }
        for (int k = 0; k < plan.batchCount(); k++) {
            List<Slice.Batch> batches = new ArrayList<>();
            for (Slice slice : slices) {
                Slice.Batch batch = slice.batch(k);
                batches.add(batch);
                batch.reads().forEach(this::read);
            }
            for (Slice.Batch batch : batches) {
                batch.fanouts().forEach(this::fanout);
            }
        }
    }

    private void read(Slice.ReadOp read) {
        A staging = staging((int) read.spanLength());
        A object = object(read.fragment());
        for (int r = 0; r < read.rangeStarts().length; r++) {
            System.arraycopy(
                    object,
                    (int) read.rangeStarts()[r],
                    staging,
                    (int) (read.rangeStarts()[r] - read.spanStart()),
                    (int) read.rangeLengths()[r]);
            storeBytesRead += read.rangeLengths()[r];
        }
        for (Slice.WriteOp w : read.writes()) {
            copy(
                    staging,
                    w.stagingOffset() - read.stagingOffset(),
                    w.srcStrides(),
                    buffer(w.toWorker(), w.buffer()),
                    w.dstOffset(),
                    w.dstStrides(),
                    w.length(),
                    w.loopCounts(),
                    0);
        }
    }

    private void fanout(Slice.FanoutOp op) {
        A from = buffer(op.delegate(), op.buffer());
        for (String target : op.targets()) {
            copy(
                    from,
                    op.dstOffset(),
                    op.dstStrides(),
                    buffer(target, op.buffer()),
                    op.dstOffset(),
                    op.dstStrides(),
                    op.length(),
                    op.loopCounts(),
                    0);
        }
    }

    /**
     * A strided copy: {@code counts} nested loops, innermost a contiguous run of {@code length}.
     */
    private static void copy(
            Object src,
            long srcOff,
            long[] srcStrides,
            Object dst,
            long dstOff,
            long[] dstStrides,
            long length,
            long[] counts,
            int loop) {
        if (loop == counts.length) {
            System.arraycopy(src, (int) srcOff, dst, (int) dstOff, (int) length);
            return;
        }
        for (long i = 0; i < counts[loop]; i++) {
            copy(
                    src,
                    srcOff + i * srcStrides[loop],
                    srcStrides,
                    dst,
                    dstOff + i * dstStrides[loop],
                    dstStrides,
                    length,
                    counts,
                    loop + 1);
        }
    }
}
