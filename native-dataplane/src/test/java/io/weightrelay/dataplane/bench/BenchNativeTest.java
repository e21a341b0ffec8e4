package io.weightrelay.dataplane.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.DataplaneError;
import io.weightrelay.dataplane.internal.DpNative;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** The yardsticks' own library loads and measures (a tiny copy, not a benchmark). */
class BenchNativeTest {

    @Test
    void memcpyMeasuresAndRefusesBadArguments() {
        ByteBuffer src = ByteBuffer.allocateDirect(64 << 10);
        ByteBuffer dst = ByteBuffer.allocateDirect(64 << 10);
        src.put(0, (byte) 7);
        double[] gbps = new double[1];
        long from = DpNative.addressOf(src);
        long to = DpNative.addressOf(dst);
        assertThat(BenchNative.dp_bench_memcpy(to, from, 64 << 10, 1, gbps)).isZero();
        assertThat(gbps[0]).isPositive();
        assertThat(dst.get(0)).isEqualTo((byte) 7);
        assertThat(BenchNative.dp_bench_memcpy(to, from, 0, 1, gbps))
                .isEqualTo(DataplaneError.INVALID_ARGUMENT.code());
    }
}
