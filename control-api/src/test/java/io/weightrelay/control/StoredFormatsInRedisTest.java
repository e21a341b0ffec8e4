package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.PublisherAssignment;
import io.weightrelay.api.control.model.TensorAssignment;
import io.weightrelay.control.checkpoint.CheckpointRecords;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.ManifestStore;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.reshard.manifest.GenerationId;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.databind.JsonNode;

/**
 * The JSON control-api keeps in Redis, through the service: what it writes is our own records with
 * their format (never a contract class's JSON, whose shape moves with the contract), what releases
 * before formats wrote still reads after an upgrade, and a record of a newer format is refused with
 * a problem naming its key. Each record's exact JSON is pinned by its own test ({@code
 * Stored*Test}).
 */
class StoredFormatsInRedisTest extends ControlApiTestSupport {

    @Autowired StringRedisTemplate redis;
    @Autowired RedisKeys keys;
    @Autowired GenerationQueries generations;
    @Autowired ManifestStore manifests;
    @Autowired CheckpointRecords checkpoints;

    private final String model = newModel();

    private static final String TOPOLOGY_BEFORE_FORMATS =
            "{\"nodes\":[{\"name\":\"t0\",\"nics\":[{\"name\":\"eth0\",\"gbps\":100.0}]},"
                    + "{\"name\":\"t1\",\"nics\":[{\"name\":\"eth0\",\"gbps\":100.0}]}]}";

    private String manifestBeforeFormats() {
        return "{\"model\":\""
                + model
                + "\",\"tensors\":[{\"name\":\"embed.weight\",\"shape\":[256,32],"
                + "\"trainerDtype\":\"fp32\",\"rolloutDtype\":\"bf16\"},"
                + "{\"name\":\"layer.0.weight\",\"shape\":[32,32],\"trainerDtype\":\"fp32\","
                + "\"rolloutDtype\":\"bf16\"},{\"name\":\"layer.0.bias\",\"shape\":[32],"
                + "\"trainerDtype\":\"fp32\",\"rolloutDtype\":\"bf16\"}],\"maxFragmentBytes\":4096}";
    }

    private Object field(String key, String field) {
        return redis.opsForHash().get(key, field);
    }

    @Test
    void whatTheServiceStoresIsOurRecordsWithTheirFormat() {
        OpenedGeneration opened = open(model, 1);
        GenerationId id = new GenerationId(model, opened.getGeneration().getGeneration());
        String digest = opened.getGeneration().getManifestDigest();

        assertThat(field(keys.generation(id), "trainerTopology"))
                .isEqualTo(
                        "{\"format\":1,\"nodes\":[{\"name\":\"t0\",\"nics\":[{\"name\":\"eth0\","
                                + "\"gbps\":100.0}]},{\"name\":\"t1\",\"nics\":[{\"name\":\"eth0\","
                                + "\"gbps\":100.0}]}]}");
        assertThat(redis.opsForValue().get(keys.manifest(model, digest)))
                .isEqualTo("{\"format\":1," + manifestBeforeFormats().substring(1));
        String assignment =
                redis.opsForValue()
                        .get(keys.assignment(digest, opened.getAssignment().getTopologyDigest()));
        assertThat(fieldNames(assignment))
                .containsExactly(
                        "format",
                        "manifestDigest",
                        "topologyDigest",
                        "tensors",
                        "bytesPerNode",
                        "balance");
        assertThat(json.readTree(assignment).get("format").intValue()).isEqualTo(1);

        String instance = "stored-" + model;
        registerLoader(instance, compatLoader(model, "grp", "n-" + model, 1));
        assertThat(field(keys.loader(instance), "workers"))
                .isEqualTo(
                        "{\"format\":1,\"workers\":[{\"workerId\":\"n-"
                                + model
                                + "-w0\",\"node\":\"n-"
                                + model
                                + "\",\"nic\":\"eth0\",\"mode\":\"compat\",\"buffers\":"
                                + "[{\"bufferId\":\"safetensors\",\"segment\":\"rx-n-"
                                + model
                                + "-w0\",\"size\":1048576}],\"fragmentCount\":0}]}");
        assertThat(field(keys.loader(instance), "nics")).isEqualTo("{\"format\":1,\"nics\":[]}");
    }

    @Test
    void aPlanSummaryIsStoredAsOurRecord() {
        long generation = publish(model, 1);
        registerLoader("plan-" + model, compatLoader(model, "grp", "p-" + model, 1));
        PlanSummary summary = resolvePlan(model, generation, "grp");
        String stored = redis.opsForValue().get(keys.planSummary(summary.getPlanId()));
        assertThat(fieldNames(stored))
                .containsExactly(
                        "format",
                        "planId",
                        "sourceDigest",
                        "targetDigest",
                        "topologyDigest",
                        "instances",
                        "storeReadBytes",
                        "deliveryBytes",
                        "batches",
                        "encodedBytes",
                        "computeMs",
                        "valid");
        assertThat(json.readTree(stored).get("format").intValue()).isEqualTo(1);
    }

    @Test
    void stateWrittenBeforeFormatsStillReadsAfterAnUpgrade() {
        OpenedGeneration opened = open(model, 1);
        GenerationId id = new GenerationId(model, opened.getGeneration().getGeneration());
        String digest = opened.getGeneration().getManifestDigest();
        String topologyDigest = opened.getAssignment().getTopologyDigest();

        redis.opsForHash().put(keys.generation(id), "trainerTopology", TOPOLOGY_BEFORE_FORMATS);
        assertThat(generations.load(id).trainers()).isEqualTo(trainers("t0", "t1"));

        redis.opsForValue().set(keys.manifest(model, digest), manifestBeforeFormats());
        assertThat(manifests.apiManifest(id)).isEqualTo(manifest(model));

        // A cached assignment as releases before formats wrote it: an idempotent open serves it.
        redis.opsForValue()
                .set(
                        keys.assignment(digest, topologyDigest),
                        "{\"manifestDigest\":\""
                                + digest
                                + "\",\"topologyDigest\":\""
                                + topologyDigest
                                + "\",\"tensors\":[{\"tensor\":\"embed.weight\",\"node\":\"t1\"},"
                                + "{\"tensor\":\"layer.0.weight\",\"node\":\"t0\"},"
                                + "{\"tensor\":\"layer.0.bias\",\"node\":\"t0\"}],"
                                + "\"bytesPerNode\":{\"t0\":4224,\"t1\":16384},"
                                + "\"balance\":1.59}");
        PublisherAssignment served = open(model, 1).getAssignment();
        assertThat(served.getTensors())
                .containsExactly(
                        new TensorAssignment("embed.weight", "t1"),
                        new TensorAssignment("layer.0.weight", "t0"),
                        new TensorAssignment("layer.0.bias", "t0"));
        assertThat(served.getBytesPerNode()).isEqualTo(Map.of("t0", 4224L, "t1", 16384L));
        assertThat(served.getBalance()).isEqualTo(1.59);

        String instance = "old-" + model;
        Loader registered = registerLoader(instance, compatLoader(model, "grp", "o-" + model, 2));
        String node = "o-" + model;
        List<String> workers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            workers.add(
                    "{\"workerId\":\""
                            + node
                            + "-w"
                            + w
                            + "\",\"node\":\""
                            + node
                            + "\",\"nic\":\"eth0\",\"mode\":\"compat\",\"buffers\":[{\"bufferId\":"
                            + "\"safetensors\",\"segment\":\"rx-"
                            + node
                            + "-w"
                            + w
                            + "\",\"size\":1048576}],\"fragmentCount\":0,\"fragments\":[]}");
        }
        redis.opsForHash()
                .putAll(
                        keys.loader(instance),
                        Map.of(
                                "workers",
                                "[" + String.join(",", workers) + "]",
                                "nics",
                                "[{\"name\":\"eth0\",\"gbps\":100.0}]"));
        Loader read = read("/api/v1/loaders/" + instance, Loader.class);
        assertThat(read.getWorkers()).isEqualTo(registered.getWorkers());
        assertThat(read.getNics())
                .containsExactly(new io.weightrelay.api.common.model.Nic("eth0", 100.0));

        redis.opsForHash()
                .putAll(
                        keys.checkpoint(id),
                        Map.of(
                                "complete",
                                "1",
                                "directory",
                                "/checkpoints/" + model,
                                "savedAt",
                                "2026-01-02T03:04:05Z",
                                "owners",
                                "[{\"segment\":\"seg-a\",\"objects\":12,\"bytes\":4096,"
                                        + "\"seconds\":0.25,\"file\":\"seg-a.bin\"},"
                                        + "{\"segment\":\"seg-b\",\"objects\":0,\"bytes\":0,"
                                        + "\"seconds\":1.5,\"error\":\"owner unreachable\"}]"));
        assertThat(checkpoints.status(id).getOwners())
                .containsExactly(
                        new OwnerCheckpoint("seg-a", 12L, 4096L, 0.25).file("seg-a.bin"),
                        new OwnerCheckpoint("seg-b", 0L, 0L, 1.5).error("owner unreachable"));
        assertThat(checkpoints.status(id).getWorstSeconds()).isEqualTo(1.5);

        String planId = "sha256:before-formats-" + model;
        redis.opsForValue()
                .set(
                        keys.planSummary(planId),
                        "{\"planId\":\""
                                + planId
                                + "\",\"sourceDigest\":\"sha256:s\",\"targetDigest\":\"sha256:g\","
                                + "\"topologyDigest\":\"sha256:t\",\"instances\":[\"i0\"],"
                                + "\"storeReadBytes\":1000,\"deliveryBytes\":2000,\"batches\":4,"
                                + "\"valid\":true,\"cached\":false,\"computeMs\":7,"
                                + "\"encodedBytes\":512}");
        PlanSummary summary = plans.summary(planId);
        assertThat(summary.getCached()).isTrue();
        assertThat(summary.getInstances()).containsExactly("i0");
        assertThat(summary.getEncodedBytes()).isEqualTo(512L);
        assertThat(summary.getBatches()).isEqualTo(4);
    }

    @Test
    void aRecordOfANewerFormatIsRefusedNamingItsKey() {
        OpenedGeneration opened = open(model, 1);
        GenerationId id = new GenerationId(model, opened.getGeneration().getGeneration());
        String key = keys.generation(id);
        Object kept = field(key, "trainerTopology");
        redis.opsForHash().put(key, "trainerTopology", "{\"format\":2,\"trainers\":\"elsewhere\"}");
        try {
            HttpResponse<String> r = get(generationPath(model, id.generation()), OPERATOR);
            assertThat(r.statusCode()).isEqualTo(500);
            JsonNode problem = json.readTree(r.body());
            assertThat(problem.get("detail").asString())
                    .contains("Redis key " + key + " holds a StoredTopology of format 2")
                    .contains("reads formats up to 1");
            assertThat(problem.get("key").asString()).isEqualTo(key);
            assertThat(problem.get("format").intValue()).isEqualTo(2);
        } finally {
            redis.opsForHash().put(key, "trainerTopology", kept);
        }
    }

    private List<String> fieldNames(String stored) {
        List<String> names = new ArrayList<>();
        json.readTree(stored).propertyNames().forEach(names::add);
        return names;
    }
}
