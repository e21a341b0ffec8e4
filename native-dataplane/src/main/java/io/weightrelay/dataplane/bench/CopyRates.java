package io.weightrelay.dataplane.bench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/**
 * The machine's own copy rates, the yardsticks benches measure a system against in the same run:
 * one thread's Java bulk copy, the C library's {@code memcpy} on several threads at once, and
 * several threads at once reading memory to take its CRC32C (the checksum the data plane proves
 * bytes with). Native memory (JavaCPP) stays in this module; callers get rates and times only.
 */
public final class CopyRates {

    private CopyRates() {}

    /**
     * One thread's bulk put between two warm direct buffers; the best of {@code rounds}. The
     * buffers' memory is freed on return, not left to a garbage collection (the bench measures
     * twice, beside a lab that fills the machine's memory).
     */
    public static double javaCopyBytesPerSecond(int size, int rounds) {
        try (BytePointer fromMemory = new BytePointer(size);
                BytePointer toMemory = new BytePointer(size)) {
            if (fromMemory.isNull() || toMemory.isNull()) {
                throw new OutOfMemoryError("no memory for a " + size + "-byte copy");
            }
            ByteBuffer from = fromMemory.asBuffer();
            ByteBuffer to = toMemory.asBuffer();
            for (int i = 0; i < size; i += 4096) {
                from.put(i, (byte) i);
                to.put(i, (byte) 0);
            }
            double best = 0;
            for (int round = 0; round < rounds; round++) {
                long started = System.nanoTime();
                to.clear().put(from.clear());
                best = Math.max(best, size / ((System.nanoTime() - started) / 1e9));
            }
            return best;
        }
    }

    /**
     * {@code threads} threads, each copying a slice of {@code slice} bytes of its own (written
     * first, so no page fault is timed) with {@code memcpy}, started together; the nanoseconds
     * until the last is done.
     */
    public static long parallelMemcpyNanos(int threads, int slice) throws Exception {
        List<BytePointer> from = new ArrayList<>();
        List<BytePointer> to = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int t = 0; t < threads; t++) {
                BytePointer src = new BytePointer(slice);
                BytePointer dst = new BytePointer(slice);
                if (src.isNull() || dst.isNull()) {
                    throw new OutOfMemoryError("no memory for a " + slice + "-byte copy slice");
                }
                src.fill(t + 1);
                dst.fill(0);
                from.add(src);
                to.add(dst);
            }
            List<Callable<Void>> copies = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                BytePointer src = from.get(t);
                BytePointer dst = to.get(t);
                copies.add(
                        () -> {
                            Pointer.memcpy(dst, src, slice);
                            return null;
                        });
            }
            long nanos = together(pool, copies).nanos();
            for (int t = 0; t < threads; t++) {
                // A copy that did not happen must not count as a fast one.
                if (to.get(t).get(slice - 1) != (byte) (t + 1)
                        || to.get(t).get(0) != (byte) (t + 1)) {
                    throw new IllegalStateException("copy thread " + t + " did not copy its slice");
                }
            }
            return nanos;
        } finally {
            pool.shutdownNow();
            from.forEach(Pointer::close);
            to.forEach(Pointer::close);
        }
    }

    /**
     * {@code threads} threads, each taking the CRC32C of a slice of {@code slice} bytes of its own
     * (written first, so no page fault is timed) with {@link CRC32C} over a direct buffer, as a
     * loader proves what landed in its buffers, started together; the nanoseconds until the last is
     * done.
     */
    public static long parallelCrc32cNanos(int threads, int slice) throws Exception {
        List<BytePointer> slices = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int t = 0; t < threads; t++) {
                BytePointer bytes = new BytePointer(slice);
                if (bytes.isNull()) {
                    throw new OutOfMemoryError("no memory for a " + slice + "-byte checksum slice");
                }
                bytes.fill(t + 1);
                slices.add(bytes);
            }
            List<Callable<Long>> sums = new ArrayList<>();
            for (BytePointer bytes : slices) {
                ByteBuffer view = bytes.asBuffer();
                sums.add(
                        () -> {
                            CRC32C crc = new CRC32C();
                            crc.update(view);
                            return crc.getValue();
                        });
            }
            Together<Long> ran = together(pool, sums);
            long sum = ran.results().stream().mapToLong(Long::longValue).sum();
            long nanos = ran.nanos();
            // A checksum that read nothing must not count as a fast one: the slices' checksums are
            // of bytes 1, 2, ..., never all 0.
            if (sum == 0) {
                throw new IllegalStateException("the checksum threads read nothing");
            }
            return nanos;
        } finally {
            pool.shutdownNow();
            slices.forEach(Pointer::close);
        }
    }

    /** What {@link #together} ran: each task's result, and the nanoseconds until the last ended. */
    private record Together<T>(List<T> results, long nanos) {}

    /**
     * Runs every task on {@code pool} (a thread each), released together once all are waiting; the
     * clock starts at the release, so no thread's start-up is timed.
     */
    private static <T> Together<T> together(ExecutorService pool, List<Callable<T>> tasks)
            throws Exception {
        CyclicBarrier start = new CyclicBarrier(tasks.size() + 1);
        List<Future<T>> done = new ArrayList<>();
        for (Callable<T> task : tasks) {
            done.add(
                    pool.submit(
                            () -> {
                                start.await();
                                return task.call();
                            }));
        }
        start.await();
        long started = System.nanoTime();
        List<T> results = new ArrayList<>();
        for (Future<T> f : done) {
            results.add(f.get());
        }
        return new Together<>(results, System.nanoTime() - started);
    }
}
