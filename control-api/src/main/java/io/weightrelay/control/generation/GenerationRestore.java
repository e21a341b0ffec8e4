package io.weightrelay.control.generation;

import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.Topology;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.CommonProblems;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/** Brings a committed generation back from a checkpoint under its own id. */
@Service
public class GenerationRestore {

    private final GenerationScripts scripts;
    private final GenerationQueries generations;
    private final ManifestStore manifests;
    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final JsonMapper json;

    GenerationRestore(
            GenerationScripts scripts,
            GenerationQueries generations,
            ManifestStore manifests,
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            JsonMapper json) {
        this.scripts = scripts;
        this.generations = generations;
        this.manifests = manifests;
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.json = json;
    }

    /**
     * Refuses a restore of a generation that exists and is not lost or aborted: its objects are
     * stored, so there is nothing to bring back (the restore script refuses it again, atomically).
     */
    public void requireRestorable(GenerationId id) {
        generations
                .find(id)
                .map(StoredGeneration::state)
                .filter(
                        s ->
                                s != io.weightrelay.api.control.model.GenerationState.LOST
                                        && s
                                                != io.weightrelay.api.control.model.GenerationState
                                                        .ABORTED)
                .ifPresent(
                        s -> {
                            throw exists(id, s.getValue());
                        });
    }

    private static RuntimeException exists(GenerationId id, String state) {
        return GenerationQueries.inState(
                GenerationProblems.GENERATION_EXISTS,
                id,
                state,
                ": its objects are stored, there is nothing to restore (a restore brings back only"
                        + " a generation that is lost or gone)");
    }

    /** What a checkpoint restore registers: a committed generation as it was saved. */
    public record Restored(
            GenerationId id,
            long trainerStep,
            SourceManifest manifest,
            String manifestDigest,
            Topology trainerTopology,
            String trainerTopologyDigest,
            OffsetDateTime committedAt) {}

    /** The outcome of {@link #register}: the generation and whether it became active. */
    public record RestoreOutcome(Generation generation, boolean active, String other) {}

    /**
     * Registers a generation restored from a checkpoint, keeping its id: the manifest (checked
     * against its digest), every object ({@code objects}: store key to {@code size|checksum|
     * segments}) and the record, then, in one atomic step, the objects, the trainer step and the
     * active pointer: active, or retired when a newer generation is active. The generation-id
     * counter is raised past it.
     */
    public RestoreOutcome register(Restored r, Map<String, String> objects) {
        io.weightrelay.reshard.manifest.SourceManifest source =
                ManifestMapper.toReshard(r.manifest());
        if (!source.digest().equals(r.manifestDigest())) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "the checkpoint's manifest has digest "
                            + source.digest()
                            + ", its record says "
                            + r.manifestDigest());
        }
        GenerationId id = r.id();
        String model = id.model();
        String prefix = model + "/" + id.generation() + "/";
        manifests.store(model, r.manifestDigest(), r.manifest(), source);
        String staging = keys.objects(id) + ":restoring:" + UUID.randomUUID();
        List<Map.Entry<String, String>> entries = new ArrayList<>(objects.entrySet());
        for (int start = 0; start < entries.size(); start += ManifestStore.CHUNK) {
            Map<String, String> chunk = new HashMap<>();
            for (int i = start; i < Math.min(entries.size(), start + ManifestStore.CHUNK); i++) {
                String key = entries.get(i).getKey();
                if (!key.startsWith(prefix)) {
                    throw CommonProblems.INVALID_REQUEST.exception(
                            "checkpoint object " + key + " is not of generation " + prefix);
                }
                chunk.put(key.substring(prefix.length()), entries.get(i).getValue());
            }
            guard.run(() -> redis.opsForHash().putAll(staging, chunk));
            // a restore that dies here leaves nothing behind for long
            guard.run(() -> redis.expire(staging, Duration.ofHours(1)));
        }
        String topologyJson =
                r.trainerTopology() == null
                        ? ""
                        : StoredTopology.of(r.trainerTopology()).write(json);
        Reply result =
                scripts.run(
                        "restore",
                        model,
                        String.valueOf(id.generation()),
                        String.valueOf(r.trainerStep()),
                        r.manifestDigest(),
                        r.trainerTopologyDigest() == null ? "" : r.trainerTopologyDigest(),
                        String.valueOf(source.fragments().size()),
                        String.valueOf(source.totalBytes()),
                        r.committedAt() == null ? "" : r.committedAt().toString(),
                        topologyJson,
                        staging);
        return switch (result.code()) {
            case "active" ->
                    new RestoreOutcome(
                            generations.get(id),
                            true,
                            result.item(1).isEmpty() ? null : result.item(1));
            case "retired" -> new RestoreOutcome(generations.get(id), false, result.item(1));
            case "manifest-missing" ->
                    throw CommonProblems.INTERNAL.exception(
                            "the manifest of the restored generation vanished before it was"
                                    + " registered; retry the restore");
            case "incomplete" ->
                    throw CommonProblems.INVALID_REQUEST.exception(
                            "the checkpoint lists "
                                    + result.item(1)
                                    + " objects, the manifest "
                                    + source.fragments().size());
            case "conflict" ->
                    throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                            "generation "
                                    + id.generation()
                                    + " of model "
                                    + model
                                    + " exists ("
                                    + result.item(1)
                                    + ") with another manifest "
                                    + result.item(2)
                                    + "; this checkpoint is of another history");
            case "busy" ->
                    throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                            "generation "
                                    + id.generation()
                                    + " is "
                                    + result.item(1)
                                    + " or being collected; it cannot be restored now");
            case "exists" -> throw exists(id, result.item(1));
            case "step-conflict" ->
                    throw GenerationProblems.TRAINER_STEP_CONFLICT
                            .exception(
                                    "trainer step "
                                            + r.trainerStep()
                                            + " belongs to generation "
                                            + result.item(1))
                            .with("generation", result.number(1));
            default -> throw result.unexpected();
        };
    }
}
