package io.weightrelay.control.assignment;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.control.model.PublisherAssignment;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * Serves publisher assignments: the pure reshard function, computed once per (manifest digest,
 * trainer topology digest) and kept in Redis. Two instances computing the same assignment at once
 * write the same value, so no lock is needed.
 */
@Service
public class AssignmentService {

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final JsonMapper json;
    private final AssignmentProperties properties;
    private final Counter hits;
    private final Counter misses;

    AssignmentService(
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            JsonMapper json,
            AssignmentProperties properties,
            MeterRegistry meters) {
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.json = json;
        this.properties = properties;
        this.hits = meters.counter("relay.assignments.cache", "result", "hit");
        this.misses = meters.counter("relay.assignments.cache", "result", "miss");
    }

    public PublisherAssignment assignment(SourceManifest manifest, Topology trainers) {
        return assignment(manifest, manifest.digest(), trainers);
    }

    /**
     * @param manifestDigest the manifest's digest, when the caller has it: digesting a Kimi-K2
     *     manifest encodes all of it again
     */
    public PublisherAssignment assignment(
            SourceManifest manifest, String manifestDigest, Topology trainers) {
        String key = keys.assignment(manifestDigest, trainers.digest());
        String cached =
                guard.call(() -> redis.opsForValue().getAndExpire(key, properties.cacheTtl()));
        if (cached != null) {
            hits.increment();
            return StoredAssignment.read(json, key, cached).toApi();
        }
        misses.increment();
        StoredAssignment computed = compute(manifest, manifestDigest, trainers);
        String value = computed.write(json);
        guard.run(() -> redis.opsForValue().set(key, value, properties.cacheTtl()));
        return computed.toApi();
    }

    private static StoredAssignment compute(
            SourceManifest manifest, String manifestDigest, Topology trainers) {
        io.weightrelay.reshard.assign.PublisherAssignment a =
                io.weightrelay.reshard.assign.PublisherAssignment.assign(manifest, trainers);
        List<StoredAssignment.Tensor> tensors = new ArrayList<>(manifest.tensors().size());
        for (int i = 0; i < manifest.tensors().size(); i++) {
            tensors.add(new StoredAssignment.Tensor(manifest.tensors().get(i).name(), a.nodeOf(i)));
        }
        Map<String, Long> bytesPerNode = new LinkedHashMap<>();
        long[] bytes = a.bytesPerNode();
        for (int n = 0; n < a.trainerNodes().size(); n++) {
            bytesPerNode.put(a.trainerNodes().get(n), bytes[n]);
        }
        return new StoredAssignment(
                StoredAssignment.FORMAT,
                manifestDigest,
                trainers.digest(),
                tensors,
                bytesPerNode,
                a.balance());
    }
}
