package io.weightrelay.lab.cluster;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.api.loader.client.model.TransportBytes;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;

/**
 * What the rollout hosts' {@link HostAgent}s answer about their engines, read back into the types a
 * lab on one machine reports ({@link LabUpdate.Engine}, with the loader's {@link UpdateProgress}),
 * so that a demo or a bench reads an update the same way on either lab.
 */
final class AgentAnswers {

    private AgentAnswers() {}

    /** Every engine of every answer, in order; fails on an answer that lists none. */
    static List<JsonNode> listed(List<JsonNode> answers) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode a : answers) {
            if (!a.has("engines")) {
                throw new IllegalStateException("update failed: " + a);
            }
            a.get("engines").forEach(out::add);
        }
        return out;
    }

    /** Every engine's update of the agents' answers to an update command. */
    static List<LabUpdate.Engine> engines(List<JsonNode> answers) {
        return listed(answers).stream().map(AgentAnswers::engine).toList();
    }

    /**
     * One engine's update as its agent answered it: what its loader reported, how long the engine
     * waited, and the bytes the agent checked (its {@code error} is the problem: the update did not
     * end UPDATED, or a byte was wrong).
     */
    static LabUpdate.Engine engine(JsonNode e) {
        String outcome = e.path("outcome").asString("null");
        UpdateProgress p =
                new UpdateProgress()
                        .updateId(e.path("update_id").asString(""))
                        .outcome("null".equals(outcome) ? null : UpdateOutcome.fromValue(outcome))
                        .generation(e.path("generation").asLong())
                        .bytesRead(e.path("bytes_read").asLong())
                        .bytesReceived(e.path("bytes_received").asLong());
        if (e.has("failing_peer")) {
            p.failingPeer(e.path("failing_peer").asString());
        }
        if (e.has("prepare_ms")) {
            p.durations(
                    new PhaseDurations()
                            .prepareMs(e.path("prepare_ms").asLong())
                            .applyMs(e.path("apply_ms").asLong())
                            .postApplyMs(e.path("post_apply_ms").asLong())
                            .fetchMs(e.path("fetch_ms").asLong())
                            .installMs(e.path("install_ms").asLong())
                            .pauseMs(e.path("pause_ms").asLong())
                            .verifyMs(e.path("verify_ms").asLong()));
        }
        if (e.has("local_read")) {
            p.transport(
                    new TransportBytes()
                            .localRead(e.path("local_read").asLong())
                            .localWritten(e.path("local_written").asLong())
                            .tcpRead(e.path("tcp_read").asLong())
                            .tcpWritten(e.path("tcp_written").asLong()));
        }
        boolean verified = e.path("verified").asBoolean();
        return new LabUpdate.Engine(
                e.path("instance").asString(),
                p,
                e.path("updated_s").asDouble(),
                e.path("bytes_verified").asLong(),
                verified ? null : e.path("error").asString());
    }
}
