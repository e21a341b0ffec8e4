package io.weightrelay.loader.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.TransferEngineBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.client.invoker.ApiClient;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * What a loader tells control-api of a worker it registers: the loader's and control-api's {@code
 * WorkerPlacement} are one class, so the worker is sent as given, less its fragments (a template
 * digest stands for them) and its buffers' Transfer Engine memory, and the JSON is what it was when
 * the two contracts had a class each.
 */
class WorkerHeaderTest {

    private static final JsonMapper CLIENT = ApiClient.createDefaultMapper(null);

    @Test
    void theWorkerGoesWithoutItsFragmentsAndItsEngineMemory() {
        WorkerPlacement w =
                new WorkerPlacement()
                        .workerId("w0")
                        .rank(3)
                        .node("node-a")
                        .nic("nic0")
                        .mode(ConsumeMode.DIRECT)
                        .addBuffersItem(
                                new ReceiveBuffer()
                                        .bufferId("params")
                                        .segment("seg")
                                        .size(4096L)
                                        .transferEngine(
                                                new TransferEngineBuffer("host:1234", 65536L)))
                        .addFragmentsItem(
                                new TargetFragment()
                                        .tensor("t")
                                        .offset(List.of(0L))
                                        .shape(List.of(4L))
                                        .bufferId("params")
                                        .bufferOffset(0L)
                                        .strides(List.of(2L)));
        String before = CLIENT.writeValueAsString(w);

        WorkerPlacement header = RestControlPlane.header(w);

        assertThat(CLIENT.readTree(CLIENT.writeValueAsString(header)))
                .isEqualTo(
                        CLIENT.readTree(
                                "{\"workerId\":\"w0\",\"rank\":3,\"node\":\"node-a\",\"nic\":\"nic0\","
                                        + "\"mode\":\"direct\",\"buffers\":[{\"bufferId\":\"params\","
                                        + "\"segment\":\"seg\",\"size\":4096,\"transferEngine\":null}],"
                                        + "\"fragments\":[],\"placement\":null,\"fragmentCount\":null}"));
        assertThat(CLIENT.writeValueAsString(w))
                .as("the registration is not changed")
                .isEqualTo(before);
    }
}
