package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.topology.Topology;
import org.junit.jupiter.api.Test;

/** A batch is at most 1/16 of the busiest reader's bytes, but never smaller than a read. */
class BatchBytesTest {

    private static long batchBytes(int[] reader, long[] spans, long readMax, long batch) {
        LongList list = new LongList(spans.length);
        for (long s : spans) {
            list.add(s);
        }
        return Planner.batchBytes(reader, list, 2, new Planner.Options(readMax, batch));
    }

    @Test
    void aReaderWithFewBytesGetsSixteenBatchesOfThemAtLeast() {
        // the busiest reader reads 16 x 50 bytes: batches of 50, under the 1000 allowed
        assertThat(batchBytes(reads(16), spans(16, 50, 8), 4, 1000)).isEqualTo(50);
        // 16 x 200 bytes: 1/16 is 200, above the 100 allowed
        assertThat(batchBytes(reads(16), spans(16, 200, 8), 4, 100)).isEqualTo(100);
    }

    /** {@code n} reads by worker 0, then one by worker 1. */
    private static int[] reads(int n) {
        int[] out = new int[n + 1];
        out[n] = 1;
        return out;
    }

    /** {@code n} spans of {@code each}, then one of {@code last}. */
    private static long[] spans(int n, long each, long last) {
        long[] out = new long[n + 1];
        java.util.Arrays.fill(out, each);
        out[n] = last;
        return out;
    }

    @Test
    void aBatchNeverGetsSmallerThanAReadOrTheReadBound() {
        assertThat(batchBytes(new int[] {0, 1}, new long[] {20, 10}, 4, 100)).isEqualTo(20);
        assertThat(batchBytes(new int[] {0, 1}, new long[] {2, 1}, 4, 100)).isEqualTo(4);
    }

    @Test
    void thePlanOfASmallModelPacksItsBusiestReaderIntoSixteenBatchesOrMore() {
        String model = "small-moe";
        SourceManifest source = Fragmenter.fragment(model, ModelCatalog.tensors(model));
        Plan plan =
                Planner.plan(
                        source,
                        Placements.of(ModelCatalog.layout(model), 2, 4, 2, 1, Mode.COMPAT, 1),
                        Topology.uniform(2, 2, 1, 100),
                        new Planner.Options(1 << 10, 64L << 20));

        long[] read = new long[plan.workerCount()];
        long largest = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            read[plan.readReader(i)] += plan.readSpan(i);
            largest = Math.max(largest, plan.readSpan(i));
        }
        long busiest = java.util.Arrays.stream(read).max().orElseThrow();
        assertThat(plan.batchBytes()).isLessThan(64L << 20);
        assertThat(plan.batchBytes()).isGreaterThanOrEqualTo(largest);
        assertThat(plan.batchCount())
                .as("busiest reader %d bytes in batches of %d", busiest, plan.batchBytes())
                .isGreaterThanOrEqualTo(plan.batchBytes() == largest ? 1 : Planner.MIN_BATCHES);
    }
}
