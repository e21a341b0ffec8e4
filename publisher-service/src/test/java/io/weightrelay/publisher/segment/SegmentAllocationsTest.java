package io.weightrelay.publisher.segment;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What {@link SegmentAllocations} frees after a heartbeat: only allocations of generations
 * control-api no longer knows and last knew under another incarnation mark, never one another
 * record holds, and nothing while an allocation is under way.
 */
class SegmentAllocationsTest {

    private final SegmentAllocations allocations = new SegmentAllocations();
    private final List<SegmentAllocations.Allocation> freed = new ArrayList<>();

    private long settle(Map<String, Boolean> known, String before, String now) {
        return allocations.settle(
                known,
                before,
                now,
                forgotten -> {
                    freed.addAll(forgotten);
                    return forgotten.stream().mapToLong(SegmentAllocations.Allocation::size).sum();
                });
    }

    private void store(String key, long offset, long size) {
        allocations.beginUntracked();
        allocations.recordAndEnd(List.of(new SegmentAllocations.Allocation(key, offset, size)));
    }

    @Test
    void aGenerationForgottenUnderANewMarkIsFreed() {
        allocations.seen("m1");
        store("m/1/a", 0, 64);
        store("m/1/b", 64, 64);
        assertThat(settle(Map.of("m/1", true), "m1", "m1")).isZero();

        assertThat(settle(Map.of("m/1", false), "m1", "m2")).isEqualTo(128);
        assertThat(freed)
                .extracting(SegmentAllocations.Allocation::offset)
                .containsExactlyInAnyOrder(0L, 64L);
        assertThat(allocations.generations()).isEmpty();
    }

    @Test
    void aGenerationCollectedUnderTheSameMarkIsOnlyForgotten() {
        allocations.seen("m1");
        store("m/1/a", 0, 64);
        assertThat(settle(Map.of("m/1", false), "m1", "m1")).isZero();
        assertThat(allocations.generations()).isEmpty();
        // Redis losing its data afterwards frees nothing of it: the collection did.
        assertThat(settle(Map.of(), "m1", "m2")).isZero();
        assertThat(freed).isEmpty();
    }

    @Test
    void aGenerationNeverHeardUnderAMarkIsNeverFreed() {
        store("m/1/a", 0, 64); // published before any heartbeat answered
        assertThat(settle(Map.of("m/1", false), null, "m2")).isZero();
        assertThat(freed).isEmpty();
        assertThat(allocations.generations()).isEmpty();
    }

    @Test
    void nothingIsFreedWhileAnAllocationIsUnderWayNorAnOffsetAnotherGenerationHolds() {
        allocations.seen("m1");
        store("m/1/a", 0, 64);
        store("m/1/b", 64, 64);
        allocations.beginUntracked(); // a reservation a rank still writes into
        assertThat(settle(Map.of("m/1", false), "m1", "m2")).isZero();
        assertThat(allocations.generations()).containsExactly("m/1");

        // Its batch became generation 2's objects, one at offset 64, which was 1/b's.
        allocations.recordAndEnd(List.of(new SegmentAllocations.Allocation("m/2/a", 64, 64)));
        assertThat(settle(Map.of("m/1", false, "m/2", true), "m2", "m2")).isEqualTo(64);
        assertThat(freed).extracting(SegmentAllocations.Allocation::key).containsExactly("m/1/a");
        assertThat(allocations.generations()).containsExactly("m/2");
    }

    @Test
    void aKnownGenerationIsTaggedOnlyWhenTheMarkHeldAcrossTheQuestions() {
        allocations.seen("m1");
        store("m/1/a", 0, 64);
        // Redis lost its data between the previous heartbeat and this one: "known" may be a new
        // generation 1, so the tag stays m1 ...
        assertThat(settle(Map.of("m/1", true), "m1", "m2")).isZero();
        // ... and when it is gone, under m2, its bytes were the old one's.
        assertThat(settle(Map.of("m/1", false), "m2", "m2")).isEqualTo(64);
    }

    @Test
    void anObjectStoredAgainAtAnotherOffsetLeavesItsEarlierAllocationToFree() {
        allocations.seen("m1");
        store("m/1/a", 0, 64);
        assertThat(settle(Map.of("m/1", true), "m1", "m1")).isZero();
        allocations.seen("m2");
        store("m/1/a", 128, 64); // generation 1 again after Redis lost its data
        assertThat(settle(Map.of("m/1", true), "m2", "m2")).isEqualTo(64);
        assertThat(freed).extracting(SegmentAllocations.Allocation::offset).containsExactly(0L);
        assertThat(allocations.generations()).containsExactly("m/1");
    }

    @Test
    void withoutAMarkUnknownGenerationsAreForgottenAndNothingIsFreed() {
        store("m/1/a", 0, 64);
        store("m/2/a", 64, 64);
        allocations.forgetUnknown(Map.of("m/1", false, "m/2", true));
        assertThat(allocations.generations()).containsExactly("m/2");
        assertThat(freed).isEmpty();
    }

    @Test
    void aRemovedObjectIsForgotten() {
        allocations.seen("m1");
        store("m/1/a", 0, 64);
        allocations.forget("m/1/a");
        assertThat(allocations.generations()).isEmpty();
        assertThat(settle(Map.of("m/1", false), "m1", "m2")).isZero();
    }
}
