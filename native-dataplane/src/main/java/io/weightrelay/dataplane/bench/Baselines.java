package io.weightrelay.dataplane.bench;

import io.weightrelay.dataplane.DataplaneError;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.internal.DpNative;

/**
 * The yardsticks, measured in native code on the same memory as the engine: any engine's segments
 * (the lab's Mooncake bench measures Mooncake's Transfer Engine against them too).
 */
public final class Baselines {
    private Baselines() {}

    /**
     * GB/s of one thread's {@code memcpy} of {@code size} bytes from {@code src} into {@code dst}.
     */
    public static double memcpy(Segment dst, Segment src, long size, int repeats) {
        double[] gbps = new double[1];
        check(BenchNative.dp_bench_memcpy(address(dst), address(src), size, repeats, gbps));
        return gbps[0];
    }

    /**
     * GB/s of a plain loopback socket copy of {@code size} bytes from {@code src} into {@code dst}
     * over {@code streams} connections at once.
     */
    public static double socket(Segment dst, Segment src, long size, int streams, int repeats) {
        double[] gbps = new double[1];
        check(
                BenchNative.dp_bench_socket(
                        address(dst), address(src), size, streams, repeats, gbps));
        return gbps[0];
    }

    private static long address(Segment s) {
        return DpNative.addressOf(s.byteBuffer(0, 1));
    }

    private static void check(int rc) {
        if (rc != 0) {
            throw new IllegalStateException("baseline failed: " + DataplaneError.fromCode(rc));
        }
    }
}
