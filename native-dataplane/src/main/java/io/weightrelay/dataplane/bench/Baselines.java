package io.weightrelay.dataplane.bench;

import io.weightrelay.dataplane.DataplaneError;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.internal.DpNative;

/** The yardsticks, measured in native code on the same memory as the engine. */
final class Baselines {
    private Baselines() {}

    static double memcpy(Segment dst, Segment src, long size, int repeats) {
        double[] gbps = new double[1];
        check(BenchNative.dp_bench_memcpy(address(dst), address(src), size, repeats, gbps));
        return gbps[0];
    }

    static double socket(Segment dst, Segment src, long size, int streams, int repeats) {
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
