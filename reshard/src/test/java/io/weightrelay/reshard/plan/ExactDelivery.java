package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;

/** The direct-mode promise, checked on a plan: single pull, exact delivery, right bytes. */
final class ExactDelivery {
    private ExactDelivery() {}

    /**
     * The plan validates, reads every stored byte once, delivers exactly the bytes the placement
     * holds, and on real bytes ({@link ByteWorld}) every registered byte is the source's.
     */
    static void assertExact(
            Plan plan, SourceManifest manifest, TargetPlacement placement, long seed) {
        ValidationReport report = PlanValidator.validate(plan, manifest, placement);
        assertThat(report.problems()).isEmpty();
        assertThat(report.readBytes()).isEqualTo(manifest.totalBytes());
        long stored = 0;
        for (Worker w : placement.workers()) {
            for (TargetFragment f : w.fragments()) {
                stored += f.bytes();
            }
        }
        assertThat(report.deliveredBytes()).isEqualTo(stored);
        assertThat(
                        ByteWorld.run(plan, manifest, placement, seed)
                                .firstMismatch(manifest, placement))
                .isNull();
    }
}
