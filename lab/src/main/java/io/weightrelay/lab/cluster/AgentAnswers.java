package io.weightrelay.lab.cluster;

import io.weightrelay.api.loader.client.model.UpdateProgress;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * What the rollout hosts' {@link HostAgent}s answer about their engines, read back into the types a
 * lab on one machine reports ({@link LabUpdate.Engine}, with the loader's {@link UpdateProgress}),
 * so that a demo or a bench reads an update the same way on either lab.
 */
final class AgentAnswers {

    private static final JsonMapper JSON = JsonMapper.builder().build();

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
        UpdateProgress p = JSON.treeToValue(e.get("progress"), UpdateProgress.class);
        boolean verified = e.path("verified").asBoolean();
        return new LabUpdate.Engine(
                e.path("instance").asString(),
                p,
                e.path("updated_s").asDouble(),
                e.path("bytes_verified").asLong(),
                verified ? null : e.path("error").asString());
    }
}
