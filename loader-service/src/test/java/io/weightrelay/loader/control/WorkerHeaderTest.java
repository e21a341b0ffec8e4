package io.weightrelay.loader.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.TransferEngineBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.DataplaneEngineName;
import io.weightrelay.api.control.client.model.LoaderRegistration;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.dataplane.DataplaneEngine;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * What a loader tells control-api of a worker it registers: the loader's and control-api's {@code
 * WorkerPlacement} are one class, so the worker is sent as given, less its fragments (a template
 * digest stands for them) and its buffers' Transfer Engine memory, and the JSON is what it was when
 * the two contracts had a class each. The memory is left out on purpose: the planner plans by
 * segment name and offset, and every sender's data plane finds the memory by the segment name the
 * loader published for it; what it implies for a plan (only a Mooncake-engine sender reaches it)
 * goes as the registration's {@code dataplaneEngine}, the loader's own, which control-api checks.
 */
class WorkerHeaderTest {

    private static final JsonMapper CLIENT = ApiClient.createDefaultMapper(null);

    /** A receive buffer in the loader's Transfer Engine memory, as an engine registers it. */
    private static ReceiveBuffer bufferInEngineMemory() {
        return new ReceiveBuffer()
                .bufferId("params")
                .segment("seg")
                .size(4096L)
                .transferEngine(new TransferEngineBuffer("host:1234", 65536L));
    }

    @Test
    void theWorkerGoesWithoutItsFragmentsAndItsEngineMemory() {
        WorkerPlacement w =
                new WorkerPlacement()
                        .workerId("w0")
                        .rank(3)
                        .node("node-a")
                        .nic("nic0")
                        .mode(ConsumeMode.DIRECT)
                        .addBuffersItem(bufferInEngineMemory())
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

    @Test
    void theRegistrationNamesTheLoadersEngineBesideWorkersWithoutEngineMemory() {
        WorkerPlacement w =
                new WorkerPlacement()
                        .workerId("w0")
                        .node("node-a")
                        .nic("nic0")
                        .mode(ConsumeMode.COMPAT)
                        .addBuffersItem(bufferInEngineMemory());
        InstanceRegistration r = new InstanceRegistration("inst-a", "m", "g", "node-a", List.of(w));

        LoaderRegistration body =
                RestControlPlane.body(
                        r,
                        List.of(RestControlPlane.header(w)),
                        "http://127.0.0.1:8081",
                        DataplaneEngine.MOONCAKE);

        JsonNode sent = CLIENT.readTree(CLIENT.writeValueAsString(body));
        assertThat(sent.path("dataplaneEngine").asString()).isEqualTo("mooncake");
        assertThat(sent.path("model").asString()).isEqualTo("m");
        assertThat(sent.path("group").asString()).isEqualTo("g");
        assertThat(sent.path("endpoint").asString()).isEqualTo("http://127.0.0.1:8081");
        assertThat(
                        sent.path("workers")
                                .get(0)
                                .path("buffers")
                                .get(0)
                                .path("transferEngine")
                                .isNull())
                .as("the worker's own Transfer Engine memory stays with the loader")
                .isTrue();
        assertThat(
                        RestControlPlane.body(r, List.of(), "", DataplaneEngine.BUILTIN)
                                .getDataplaneEngine())
                .isEqualTo(DataplaneEngineName.BUILTIN);
    }
}
