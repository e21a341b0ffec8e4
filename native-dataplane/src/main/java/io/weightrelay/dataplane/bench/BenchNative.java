package io.weightrelay.dataplane.bench;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Platform;

/**
 * JavaCPP binding of the benchmark's yardsticks in {@code src/bench/cpp/dp_bench.h}: a library of
 * its own, apart from the data plane's C API.
 */
@Platform(
        include = {"dp_bench.h", "dp_bench.cc"},
        compiler = "cpp17",
        library = "jnidataplanebench")
final class BenchNative {
    static {
        Loader.load();
    }

    private BenchNative() {}

    static native int dp_bench_memcpy(
            @Cast("int64_t") long dst,
            @Cast("int64_t") long src,
            @Cast("int64_t") long length,
            int repeats,
            double[] gbpsOut);

    static native int dp_bench_socket(
            @Cast("int64_t") long dst,
            @Cast("int64_t") long src,
            @Cast("int64_t") long length,
            int streams,
            int repeats,
            double[] gbpsOut);
}
