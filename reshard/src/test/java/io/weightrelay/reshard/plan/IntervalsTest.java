package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The run footprints slices and plans are checked with: exact, and not one interval per row. */
class IntervalsTest {

    private static Intervals merged(long... bounds) {
        Intervals iv = new Intervals(4);
        for (int i = 0; i < bounds.length; i += 2) {
            iv.add(bounds[i], bounds[i + 1]);
        }
        return iv.sortedDisjoint();
    }

    @Test
    void denseInnerLoopsWidenThePiece() {
        Intervals iv = new Intervals(4);
        // 4 rows of 2 x 8 bytes, the inner loop dense (stride 8), rows 64 bytes apart.
        iv.addRun(0, 8, new long[] {4, 2}, new long[] {64, 8});
        assertThat(iv.size()).isEqualTo(4);
        assertThat(iv.bytes()).isEqualTo(64);
        Intervals dense = new Intervals(4);
        dense.addRun(100, 8, new long[] {1, 3, 2}, new long[] {999, 16, 8});
        assertThat(dense.size()).isEqualTo(1);
        assertThat(dense.start(0)).isEqualTo(100);
        assertThat(dense.end(0)).isEqualTo(148);
    }

    @Test
    void containsRunIsExactWhereTheHullIsNotInside() {
        // Rows [0,16), [64,80), [128,144) lie in the ranges although their hull [0,144) does not.
        Intervals ranges = merged(0, 16, 64, 80, 128, 144);
        assertThat(ranges.containsRun(0, 16, new long[] {3}, new long[] {64})).isTrue();
        assertThat(ranges.containsRun(0, 17, new long[] {3}, new long[] {64})).isFalse();
        assertThat(ranges.containsRun(0, 16, new long[] {4}, new long[] {64})).isFalse();
        // Inside one range at once; empty runs are inside anything.
        assertThat(merged(0, 1000).containsRun(8, 8, new long[] {4}, new long[] {100})).isTrue();
        assertThat(ranges.containsRun(500, 0, new long[] {3}, new long[] {64})).isTrue();
        assertThat(ranges.containsRun(500, 8, new long[] {0}, new long[] {64})).isTrue();
        // A negative stride reaches below the offset.
        assertThat(ranges.containsRun(128, 16, new long[] {3}, new long[] {-64})).isTrue();
        assertThat(ranges.containsRun(129, 16, new long[] {3}, new long[] {-64})).isFalse();
    }
}
