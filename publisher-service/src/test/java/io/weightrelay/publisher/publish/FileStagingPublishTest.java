package io.weightrelay.publisher.publish;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.publisher.client.model.PublishState;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.trainer.client.PublishFailedException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The publish path with a staging file of its own: every fragment is copied once from staging into
 * the segment by a put, which fails when no segment has room.
 */
@PublishEndToEndTest.Staging(mode = "file", segmentSize = "28MB")
class FileStagingPublishTest extends PublishEndToEndTest {

    @Test
    void aGenerationWithAFailedPutIsAbortedAndNeverCommitted() {
        SourceManifest good = tinyFp32ToBf16("e2e-fail");
        long active = publish(good, 0).generation();

        // Larger than the free space of the only segment: some put finds no room anywhere.
        List<TensorSpec> tensors = new ArrayList<>(good.tensors());
        tensors.add(new TensorSpec("huge.weight", Shape.of(4096, 4096), DType.F32, DType.BF16));
        SourceManifest tooBig = Fragmenter.fragment(good.model(), tensors, 64 << 10);

        PublishFailedException e = publishFails(tooBig, 1);
        assertThat(e.getMessage()).contains("aborted").contains("store-failed");
        long failed = e.generation();
        assertThat(state(good.model(), failed)).isEqualTo(GenerationState.ABORTED);
        assertThat(publisher.status(good.model(), failed).getState())
                .isEqualTo(PublishState.FAILED);
        assertNoneStored(tooBig, failed);
        assertThat(state(good.model(), active)).isEqualTo(GenerationState.ACTIVE);
        assertThat(controlApi.generations().getActiveGeneration(good.model()).getGeneration())
                .isEqualTo(active);
        assertAllStored(good, active);
    }
}
