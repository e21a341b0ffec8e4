package io.weightrelay.loader.instance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.TransferEngineBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.model.DirectInstall;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.service.problem.RelayException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A staged instance serves from a serving copy the loader makes of a receive segment it holds. A
 * worker whose buffer is its own Transfer Engine memory holds its weights itself: staged, its
 * serving copy would be made of the loader's read-back of that memory and the engine would never
 * serve what it installs. Such a registration is refused before anything is opened or registered,
 * naming the worker and the buffer.
 */
class StagedForeignBufferRefusalTest {

    private static InstanceRegistration withOwnTransferEngineMemory(DirectInstall install) {
        ReceiveBuffer params = new ReceiveBuffer("params", "te-w1", 4096L);
        params.setTransferEngine(new TransferEngineBuffer("node-a:17001", 1L << 32));
        WorkerPlacement worker =
                new WorkerPlacement("w1", "node-a", "eth0", ConsumeMode.DIRECT, List.of(params));
        worker.setFragments(
                List.of(
                        new TargetFragment(
                                "w",
                                List.of(0L, 0L),
                                List.of(4L, 4L),
                                "params",
                                0L,
                                List.of(16L, 4L))));
        InstanceRegistration r =
                new InstanceRegistration("inst-0", "qwen", "g0", "node-a", List.of(worker));
        r.setDirectInstall(install);
        return r;
    }

    @Test
    void aStagedInstanceWhoseWorkerDeclaresItsOwnTransferEngineMemoryIsRefused() {
        // No control plane, no data plane: the refusal comes before either is asked anything.
        InstanceService instances = new InstanceService(null, null, null);

        RelayException refused =
                catchThrowableOfType(
                        RelayException.class,
                        () ->
                                instances.register(
                                        withOwnTransferEngineMemory(DirectInstall.STAGED)));

        assertThat(refused.kind()).isEqualTo(InstanceProblems.INVALID_REGISTRATION);
        assertThat(refused.getStatusCode().value()).isEqualTo(400);
        assertThat(refused.getBody().getDetail())
                .contains("worker w1", "buffer params", "node-a:17001", "directInstall: inPlace");
        assertThat(refused.getBody().getProperties())
                .containsEntry("worker", "w1")
                .containsEntry("buffer", "params");
        assertThat(instances.current()).isEmpty();
    }
}
