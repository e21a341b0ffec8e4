package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.CheckpointStatus;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.reshard.manifest.GenerationId;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

/** What control-api remembers of each generation's last checkpoint, and reports as its status. */
@Component
public class CheckpointRecords {

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final JsonMapper json;

    CheckpointRecords(
            StringRedisTemplate redis, RedisKeys keys, RedisGuard guard, JsonMapper json) {
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.json = json;
    }

    /** What is remembered of a generation's last checkpoint (not saved, when nothing is). */
    public CheckpointStatus status(GenerationId id) {
        String key = keys.checkpoint(id);
        Map<Object, Object> h = guard.call(() -> redis.opsForHash().entries(key));
        CheckpointStatus status =
                new CheckpointStatus(id.model(), id.generation(), "1".equals(h.get("complete")));
        if (h.isEmpty()) {
            return status;
        }
        status.setDirectory((String) h.get("directory"));
        status.setSavedAt(time(h.get("savedAt")));
        status.setRestoredAt(time(h.get("restoredAt")));
        if (h.get("bytes") != null) {
            status.setBytes(Long.parseLong((String) h.get("bytes")));
        }
        if (h.get("saveSeconds") != null) {
            status.setSaveSeconds(Double.parseDouble((String) h.get("saveSeconds")));
        }
        if (h.get("owners") != null) {
            List<OwnerCheckpoint> list =
                    StoredOwners.read(json, key, (String) h.get("owners")).toApi();
            status.setOwners(list);
            CheckpointReport r = report(id, null, list);
            status.setMeanSeconds(r.getMeanSeconds());
            status.setWorstSeconds(r.getWorstSeconds());
        }
        return status;
    }

    /** Records a complete checkpoint, saved or (with {@code restoredAt}) restored from. */
    void saved(
            GenerationId id,
            Path dir,
            OffsetDateTime savedAt,
            Long bytes,
            Double saveSeconds,
            List<OwnerCheckpoint> results,
            OffsetDateTime restoredAt) {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("complete", "1");
        fields.put("directory", dir.toString());
        fields.put("savedAt", savedAt.toString());
        fields.put(
                "segments",
                String.join(",", results.stream().map(OwnerCheckpoint::getSegment).toList()));
        fields.put("owners", StoredOwners.of(results).write(json));
        if (bytes != null) {
            fields.put("bytes", bytes.toString());
        }
        if (saveSeconds != null) {
            fields.put("saveSeconds", saveSeconds.toString());
        }
        if (restoredAt != null) {
            fields.put("restoredAt", restoredAt.toString());
        }
        String key = keys.checkpoint(id);
        guard.run(
                () -> {
                    if (restoredAt == null) {
                        redis.delete(key);
                    }
                    redis.opsForHash().putAll(key, fields);
                });
    }

    /**
     * Records a save that failed. A failed save removes only what it wrote, so a complete
     * checkpoint recorded before (in this directory or another) still stands and stays recorded.
     */
    void failed(GenerationId id, Path dir, List<OwnerCheckpoint> results) {
        String key = keys.checkpoint(id);
        if ("1".equals(guard.call(() -> redis.opsForHash().get(key, "complete")))) {
            return;
        }
        guard.run(
                () -> {
                    redis.delete(key);
                    redis.opsForHash()
                            .putAll(
                                    key,
                                    Map.of(
                                            "complete",
                                            "0",
                                            "directory",
                                            dir.toString(),
                                            "owners",
                                            StoredOwners.of(results).write(json)));
                });
    }

    /**
     * Takes the lock that keeps two restores of one generation apart; false when another holds it.
     * It expires after {@code ttl}.
     */
    boolean lockRestore(GenerationId id, String token, java.time.Duration ttl) {
        Boolean taken =
                guard.call(() -> redis.opsForValue().setIfAbsent(restoreLock(id), token, ttl));
        return Boolean.TRUE.equals(taken);
    }

    /** Releases the restore lock if {@code token} still holds it. */
    void unlockRestore(GenerationId id, String token) {
        String key = restoreLock(id);
        guard.run(
                () -> {
                    if (token.equals(redis.opsForValue().get(key))) {
                        redis.delete(key);
                    }
                });
    }

    private String restoreLock(GenerationId id) {
        return keys.checkpoint(id) + ":restoring";
    }

    private static OffsetDateTime time(Object value) {
        return value == null ? null : OffsetDateTime.parse((String) value);
    }

    static CheckpointReport report(
            GenerationId id, String directory, List<OwnerCheckpoint> owners) {
        double sum = 0;
        double worst = 0;
        for (OwnerCheckpoint o : owners) {
            sum += o.getSeconds();
            worst = Math.max(worst, o.getSeconds());
        }
        double mean = owners.isEmpty() ? 0 : sum / owners.size();
        CheckpointReport report =
                new CheckpointReport(id.model(), id.generation(), owners, mean, worst);
        report.setDirectory(directory);
        return report;
    }
}
