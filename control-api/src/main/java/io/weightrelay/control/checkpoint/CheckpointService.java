package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.generation.GenerationProblems;
import io.weightrelay.control.generation.GenerationService;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.control.store.ObjectStore;
import io.weightrelay.reshard.manifest.ObjectKeys;
import java.time.Clock;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;

/**
 * Saves and restores generations through the segment owners. Which owners hold a generation comes
 * from the store's own object directory, so a save calls exactly those owners and no GPU process.
 */
@Service
public class CheckpointService {

    private static final Logger log = LoggerFactory.getLogger(CheckpointService.class);

    private final GenerationService generations;
    private final Registry registry;
    private final ObjectStore store;
    private final OwnerClient owners;
    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final CheckpointProperties properties;
    private final Clock clock;

    CheckpointService(
            GenerationService generations,
            Registry registry,
            ObjectStore store,
            OwnerClient owners,
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            CheckpointProperties properties,
            Clock clock) {
        this.generations = generations;
        this.registry = registry;
        this.store = store;
        this.owners = owners;
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.properties = properties;
        this.clock = clock;
    }

    public CheckpointReport save(String model, long generation, String directory) {
        GenerationService.StoredGeneration g = committed(model, generation);
        List<String> objectKeys = generations.objectKeys(model, generation, g.manifestDigest());
        Map<String, List<String>> locations = store.locations(objectKeys);
        List<String> missing = new ArrayList<>();
        Map<String, Long> expectedPerSegment = new TreeMap<>();
        for (String key : objectKeys) {
            List<String> segments = locations.get(key);
            if (segments == null || segments.isEmpty()) {
                missing.add(key);
                continue;
            }
            for (String segment : segments) {
                expectedPerSegment.merge(segment, 1L, Long::sum);
            }
        }
        if (!missing.isEmpty()) {
            throw CheckpointProblems.OBJECTS_NOT_STORED
                    .exception(
                            missing.size()
                                    + " object(s) of generation "
                                    + generation
                                    + " are not in the store; a checkpoint would be unusable")
                    .with("objects", missing.subList(0, Math.min(20, missing.size())));
        }
        // Each owner gets the published checksums of what it holds, and saves only matching bytes.
        Map<Object, Object> registered =
                guard.call(() -> redis.opsForHash().entries(keys.objects(model, generation)));
        Map<String, Map<String, String>> checksumsPerSegment = new TreeMap<>();
        registered.forEach(
                (fragment, value) -> {
                    String key = ObjectKeys.key(model, generation, (String) fragment);
                    String checksum = ((String) value).split("\\|", -1)[1];
                    for (String segment : locations.getOrDefault(key, List.of())) {
                        checksumsPerSegment
                                .computeIfAbsent(segment, x -> new TreeMap<>())
                                .put(key, checksum);
                    }
                });
        List<OwnerCheckpoint> results =
                callOwners(
                        expectedPerSegment.keySet(),
                        segment ->
                                new OwnerCheckpointRequest()
                                        .model(model)
                                        .generation(generation)
                                        .directory(directory)
                                        .checksums(
                                                checksumsPerSegment.getOrDefault(
                                                        segment, Map.of())),
                        owners::save);
        for (OwnerCheckpoint r : results) {
            long expected = expectedPerSegment.getOrDefault(r.getSegment(), 0L);
            if (r.getError() == null && r.getObjects() != expected) {
                r.setError("saved " + r.getObjects() + " objects, the store says " + expected);
            }
        }
        guard.run(
                () ->
                        redis.opsForHash()
                                .putAll(
                                        keys.checkpoint(model, generation),
                                        Map.of(
                                                "directory",
                                                directory,
                                                "segments",
                                                String.join(",", expectedPerSegment.keySet()),
                                                "savedAt",
                                                clock.instant()
                                                        .atOffset(ZoneOffset.UTC)
                                                        .toString())));
        CheckpointReport report = report(model, generation, directory, results);
        log.info(
                "model {}: generation {} saved to {} by {} owner(s), mean {} s, worst {} s",
                model,
                generation,
                directory,
                results.size(),
                report.getMeanSeconds(),
                report.getWorstSeconds());
        return report;
    }

    public Generation restore(String model, long generation, String directory) {
        GenerationService.StoredGeneration g = committed(model, generation);
        String recorded =
                guard.call(
                        () ->
                                (String)
                                        redis.opsForHash()
                                                .get(
                                                        keys.checkpoint(model, generation),
                                                        "segments"));
        TreeSet<String> segments = new TreeSet<>();
        if (recorded != null && !recorded.isEmpty()) {
            segments.addAll(Arrays.asList(recorded.split(",")));
        } else {
            registry.liveSegments().forEach(s -> segments.add(s.getSegment()));
        }
        OwnerCheckpointRequest request =
                new OwnerCheckpointRequest()
                        .model(model)
                        .generation(generation)
                        .directory(directory);
        List<OwnerCheckpoint> results = callOwners(segments, request, owners::restore);
        results.stream()
                .filter(r -> r.getError() != null)
                .forEach(
                        r ->
                                log.warn(
                                        "restore of generation {} on {} failed: {}",
                                        generation,
                                        r.getSegment(),
                                        r.getError()));
        List<String> objectKeys = generations.objectKeys(model, generation, g.manifestDigest());
        int present = store.existing(objectKeys).size();
        if (present != objectKeys.size()) {
            throw CheckpointProblems.OBJECTS_NOT_STORED
                    .exception(
                            (objectKeys.size() - present)
                                    + " object(s) are still missing after the restore; the"
                                    + " active generation is unchanged")
                    .with("owners", results);
        }
        return generations.activate(model, generation);
    }

    private GenerationService.StoredGeneration committed(String model, long generation) {
        GenerationService.StoredGeneration g = generations.load(model, generation).requireNotLost();
        if (!g.committed()) {
            throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                    "generation " + generation + " is " + g.state() + ", never committed");
        }
        return g;
    }

    private List<OwnerCheckpoint> callOwners(
            Iterable<String> segments,
            OwnerCheckpointRequest request,
            BiFunction<String, OwnerCheckpointRequest, OwnerCheckpointResult> call) {
        return callOwners(segments, segment -> request, call);
    }

    private List<OwnerCheckpoint> callOwners(
            Iterable<String> segments,
            java.util.function.Function<String, OwnerCheckpointRequest> requestFor,
            BiFunction<String, OwnerCheckpointRequest, OwnerCheckpointResult> call) {
        List<String> names = new ArrayList<>();
        segments.forEach(names::add);
        if (names.isEmpty()) {
            return List.of();
        }
        ExecutorService pool =
                Executors.newFixedThreadPool(Math.min(properties.parallelism(), names.size()));
        try {
            List<Future<OwnerCheckpoint>> futures = new ArrayList<>();
            for (String segment : names) {
                futures.add(pool.submit(() -> callOne(segment, requestFor.apply(segment), call)));
            }
            List<OwnerCheckpoint> out = new ArrayList<>();
            for (Future<OwnerCheckpoint> f : futures) {
                try {
                    out.add(f.get());
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while calling owners", ex);
                } catch (java.util.concurrent.ExecutionException ex) {
                    throw new IllegalStateException(ex.getCause());
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private OwnerCheckpoint callOne(
            String segment,
            OwnerCheckpointRequest request,
            BiFunction<String, OwnerCheckpointRequest, OwnerCheckpointResult> call) {
        Optional<SegmentOwner> owner = registry.findSegment(segment);
        if (owner.isEmpty() || !owner.get().getAlive() || owner.get().getAdminUrl() == null) {
            return failed(
                    segment,
                    owner.isEmpty()
                            ? "no owner registered"
                            : (!owner.get().getAlive()
                                    ? "owner is not alive"
                                    : "owner has no admin URL"),
                    0);
        }
        long start = System.nanoTime();
        try {
            OwnerCheckpointResult result = call.apply(owner.get().getAdminUrl(), request);
            double seconds =
                    result.getSeconds() != null
                            ? result.getSeconds()
                            : (System.nanoTime() - start) / 1e9;
            OwnerCheckpoint done =
                    new OwnerCheckpoint(segment, result.getObjects(), result.getBytes(), seconds);
            return done;
        } catch (RuntimeException ex) {
            return failed(segment, ex.getMessage(), (System.nanoTime() - start) / 1e9);
        }
    }

    private static OwnerCheckpoint failed(String segment, String error, double seconds) {
        OwnerCheckpoint r = new OwnerCheckpoint(segment, 0L, 0L, seconds);
        r.setError(error == null ? "failed" : error);
        return r;
    }

    private static CheckpointReport report(
            String model, long generation, String directory, List<OwnerCheckpoint> owners) {
        double sum = 0;
        double worst = 0;
        for (OwnerCheckpoint o : owners) {
            sum += o.getSeconds();
            worst = Math.max(worst, o.getSeconds());
        }
        double mean = owners.isEmpty() ? 0 : sum / owners.size();
        CheckpointReport report = new CheckpointReport(model, generation, owners, mean, worst);
        report.setDirectory(directory);
        return report;
    }
}
