package io.weightrelay.control.plan;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.generation.GenerationProblems;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.ManifestStore;
import io.weightrelay.control.generation.StoredGeneration;
import io.weightrelay.control.redis.Compression;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.registry.PlacementTemplates;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.checksum.ObjectVerification;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.PlanLoads;
import io.weightrelay.reshard.plan.PlanValidator;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.plan.PlanningException;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.plan.ValidationReport;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.problem.RelayException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * Resolves routing plans. A plan is a pure function of three digests, so it is computed once and
 * kept: requests on one instance share one computation (single flight), instances share one
 * computation through a Redis lock, and everyone else reads the result. The summary is written
 * after the encodings, so a present summary means a complete plan.
 */
@Service
public class PlanService {

    private static final Logger log = LoggerFactory.getLogger(PlanService.class);
    private static final Duration POLL = Duration.ofMillis(50);
    private static final int SLICES_PER_SCAN = 4;
    private static final int SCANS_AT_ONCE = 2;

    private final StringRedisTemplate redis;
    private final RedisTemplate<String, byte[]> bytes;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final JsonMapper json;
    private final GenerationQueries generations;
    private final ManifestStore manifests;
    private final Registry registry;
    private final PlacementTemplates templates;
    private final PlanProperties properties;
    private final PlanComputations computations;
    private final Counter hits;
    private final Counter misses;
    private final Timer computeTime;
    private final Map<String, CompletableFuture<PlanSummary>> inFlight = new ConcurrentHashMap<>();

    PlanService(
            StringRedisTemplate redis,
            RedisTemplate<String, byte[]> bytesRedisTemplate,
            RedisKeys keys,
            RedisGuard guard,
            JsonMapper json,
            GenerationQueries generations,
            ManifestStore manifests,
            Registry registry,
            PlacementTemplates templates,
            PlanProperties properties,
            PlanComputations computations,
            MeterRegistry meters) {
        this.templates = templates;
        this.redis = redis;
        this.bytes = bytesRedisTemplate;
        this.keys = keys;
        this.guard = guard;
        this.json = json;
        this.generations = generations;
        this.manifests = manifests;
        this.registry = registry;
        this.properties = properties;
        this.computations = computations;
        this.hits = meters.counter("relay.plans.cache", "result", "hit");
        this.misses = meters.counter("relay.plans.cache", "result", "miss");
        this.computeTime = meters.timer("relay.plans.compute");
    }

    public PlanSummary resolve(PlanRequest request) {
        StoredGeneration generation =
                generations
                        .load(new GenerationId(request.getModel(), request.getGeneration()))
                        .requireNotLost();
        return resolve(request.getModel(), generation, request.getGroup()).summary();
    }

    /**
     * A resolved plan and the live loaders it was resolved against (read once, so a caller that
     * also needs the group's registrations sees exactly those the plan was made for).
     */
    public record Resolution(PlanSummary summary, List<Loader> loaders) {}

    /** Resolves the plan of {@code group} for a generation the caller already loaded. */
    public Resolution resolve(String model, StoredGeneration generation, String group) {
        if (generation.state() == GenerationState.ABORTED) {
            throw GenerationProblems.GENERATION_NOT_OPEN.exception(
                    "generation " + generation.id() + " was aborted");
        }
        List<Loader> loaders = registry.liveLoaders(model, group);
        if (loaders.isEmpty()) {
            throw PlanProblems.NO_LIVE_LOADERS
                    .exception(
                            "rollout group " + group + " of model " + model + " has no live loader")
                    .with("group", group);
        }
        PlanInputs inputs =
                PlanInputs.of(
                        manifests.sourceManifest(model, generation),
                        generation.manifestDigest(),
                        generation.trainers(),
                        loaders,
                        properties.defaultNicGbps());
        inputs.check(templates);
        String planId = inputs.planId(properties.options());
        PlanSummary cached = cachedSummary(planId);
        if (cached != null) {
            hits.increment();
            return new Resolution(cached.cached(true), loaders);
        }
        CompletableFuture<PlanSummary> mine = new CompletableFuture<>();
        CompletableFuture<PlanSummary> running = inFlight.putIfAbsent(planId, mine);
        if (running != null) {
            hits.increment();
            return new Resolution(asCached(join(running)), loaders);
        }
        try {
            PlanSummary summary = computeOnce(planId, inputs);
            mine.complete(summary);
            return new Resolution(summary, loaders);
        } catch (RuntimeException ex) {
            mine.completeExceptionally(ex);
            throw ex;
        } finally {
            inFlight.remove(planId, mine);
        }
    }

    public PlanSummary summary(String planId) {
        PlanSummary summary = cachedSummary(planId);
        if (summary == null) {
            throw planNotFound(planId);
        }
        return summary.cached(true);
    }

    public byte[] encoded(String planId) {
        byte[] deflated = guard.call(() -> bytes.opsForValue().get(keys.planEncoded(planId)));
        if (deflated == null) {
            throw planNotFound(planId);
        }
        return Compression.inflate(deflated);
    }

    /** A loader's slice, its encoding as {@link Slice#encode} makes it. */
    public byte[] slice(String planId, String instance) {
        byte[] stored = storedSlice(planId, instance);
        return isGzip(stored) ? gunzip(stored) : Compression.inflate(stored);
    }

    /**
     * A loader's slice as one gzip member, compressed once when the plan was computed: what goes
     * out, untouched, to a loader that accepts gzip (32 loaders fetch theirs at once at prepare,
     * each several MB of encoding at Kimi-K2 scale, a sixth of it compressed).
     */
    public byte[] gzippedSlice(String planId, String instance) {
        byte[] stored = storedSlice(planId, instance);
        // A slice stored raw-deflated (by a control-api before slices were gzipped) is converted.
        return isGzip(stored) ? stored : Compression.gzip(Compression.inflate(stored));
    }

    private byte[] storedSlice(String planId, String instance) {
        byte[] stored = guard.call(() -> bytes.opsForValue().get(keys.planSlice(planId, instance)));
        if (stored == null) {
            summary(planId);
            throw PlanProblems.SLICE_NOT_FOUND
                    .exception("loader " + instance + " has no part in plan " + planId)
                    .with("instance", instance);
        }
        return stored;
    }

    /**
     * Whether {@code stored} starts with gzip's magic bytes. A raw deflate stream never does: its
     * first byte would declare the reserved block type 3.
     */
    private static boolean isGzip(byte[] stored) {
        return stored.length >= 2 && (stored[0] & 0xff) == 0x1f && (stored[1] & 0xff) == 0x8b;
    }

    private static byte[] gunzip(byte[] gzipped) {
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(gzipped))) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("corrupt slice encoding in Redis", e);
        }
    }

    /**
     * The ranges the plan reads, by object ({@link ObjectVerification#expected}); from the encoding
     * kept with the plan, or, for a plan cached before it was kept, from the plan itself.
     */
    public Map<String, List<ObjectVerification.ExpectedRange>> expectedRanges(String planId) {
        byte[] deflated = guard.call(() -> bytes.opsForValue().get(keys.planExpected(planId)));
        if (deflated != null) {
            return ObjectVerification.decodeExpected(Compression.inflate(deflated));
        }
        return ObjectVerification.expected(Plan.decode(encoded(planId)));
    }

    /**
     * The plan's bytes per NIC and per instance, computed with the plan; a plan cached before loads
     * were kept is decoded once to compute them.
     */
    public PlanLoads load(String planId) {
        String key = keys.planLoad(planId);
        String value = guard.call(() -> redis.opsForValue().get(key));
        if (value != null) {
            return StoredPlanLoads.read(json, key, value).loads();
        }
        Long ttl = guard.call(() -> redis.getExpire(keys.planSummary(planId), TimeUnit.SECONDS));
        PlanLoads loads = PlanLoads.of(Plan.decode(encoded(planId)));
        if (ttl != null && ttl > 0) {
            String loadJson = StoredPlanLoads.of(loads).write(json);
            guard.run(() -> redis.opsForValue().set(key, loadJson, Duration.ofSeconds(ttl)));
        }
        return loads;
    }

    /** Computes the plan unless another instance does; then waits for its result. */
    private PlanSummary computeOnce(String planId, PlanInputs inputs) {
        String lockKey = keys.planLock(planId);
        String token = UUID.randomUUID().toString();
        long deadline = System.nanoTime() + properties.computeTimeout().toNanos();
        while (true) {
            Boolean locked =
                    guard.call(
                            () ->
                                    redis.opsForValue()
                                            .setIfAbsent(lockKey, token, properties.lockTtl()));
            if (Boolean.TRUE.equals(locked)) {
                try {
                    PlanSummary done = cachedSummary(planId);
                    if (done != null) {
                        hits.increment();
                        return done.cached(true);
                    }
                    return computations.run(
                            planId, () -> compute(planId, inputs), properties.computeTimeout());
                } finally {
                    guard.run(
                            () -> {
                                if (token.equals(redis.opsForValue().get(lockKey))) {
                                    redis.delete(lockKey);
                                }
                            });
                }
            }
            PlanSummary done = cachedSummary(planId);
            if (done != null) {
                hits.increment();
                return done.cached(true);
            }
            if (System.nanoTime() > deadline) {
                throw PlanProblems.PLAN_BUSY.exception(
                        "plan " + planId + " is still being computed elsewhere; retry");
            }
            sleep(POLL);
        }
    }

    private PlanSummary compute(String planId, PlanInputs inputs) {
        misses.increment();
        long start = System.nanoTime();
        PlanSummary summary =
                compute(
                        planId,
                        inputs.source(),
                        inputs.placement(templates),
                        inputs.topology(),
                        Keep.STORE);
        computeTime.record(Duration.ofNanos(System.nanoTime() - start));
        return summary;
    }

    /** Whether a computation stores what it made: a warm-up at start-up keeps nothing. */
    private enum Keep {
        STORE,
        NOTHING
    }

    /**
     * Runs, once, the computation every plan goes through (the planner, its validation, the
     * encodings, the slices, the expected ranges and the loads, all compressed as stored) for a
     * plan of catalog model {@value #WARM_UP_MODEL} and a synthetic group of each mode, storing
     * nothing: so the first plan a generation needs is not also the JIT's first run of that code.
     * What it costs is start-up time, before the service reports ready.
     */
    void warmUp() {
        SourceManifest source =
                Fragmenter.fragment(WARM_UP_MODEL, ModelCatalog.tensors(WARM_UP_MODEL));
        Topology topology = Topology.uniform(2, 2, 1, properties.defaultNicGbps());
        for (Mode mode : Mode.values()) {
            TargetPlacement placement =
                    Placements.of(ModelCatalog.layout(WARM_UP_MODEL), 2, 4, 2, 1, mode, 1);
            compute("warm-up-" + mode, source, placement, topology, Keep.NOTHING);
        }
    }

    static final String WARM_UP_MODEL = "small-moe";

    private PlanSummary compute(
            String planId,
            SourceManifest source,
            TargetPlacement placement,
            Topology topology,
            Keep keep) {
        long start = System.nanoTime();
        boolean store = keep == Keep.STORE;
        Plan plan;
        ValidationReport report;
        try {
            plan = Planner.plan(source, placement, topology, properties.options());
            report = PlanValidator.validate(plan, source, placement);
        } catch (PlanningException | IllegalArgumentException ex) {
            throw PlanProblems.PLAN_FAILED.exception(String.valueOf(ex.getMessage()), ex);
        }
        byte[] encoded = plan.encode();
        long computeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        if (!report.valid()) {
            log.warn("plan {} failed validation: {}", planId, report.problems());
        }
        List<String> instances = placement.instances();
        PlanSummary summary =
                new PlanSummary(
                        planId,
                        plan.sourceDigest(),
                        plan.targetDigest(),
                        plan.topologyDigest(),
                        instances,
                        report.readBytes(),
                        report.deliveredBytes(),
                        plan.batchCount(),
                        report.valid());
        summary.setEncodedBytes((long) encoded.length);
        summary.setComputeMs(computeMs);
        summary.setCached(false);
        Duration ttl = properties.ttl();
        byte[] deflated = Compression.deflate(encoded);
        // The whole plan's encoding (95 MB at Kimi-K2 scale) is garbage from here: the slices are
        // made next, and each full collection of a 1 GiB heap that holds it too costs a second.
        encoded = null;
        if (store) {
            guard.run(() -> bytes.opsForValue().set(keys.planEncoded(planId), deflated, ttl));
        }
        // A few slices per scan of the plan: all of them at once would hold every loader's
        // columns in memory together (near a 1 GiB heap at 7,000 tensors and 32 instances), one
        // at a time scans the whole plan once per instance. Two scans run at once, each of half
        // as many slices as one scan used to make: the same memory, both cores.
        List<Set<String>> groups = new ArrayList<>();
        for (int from = 0; from < instances.size(); from += SLICES_PER_SCAN) {
            groups.add(
                    new LinkedHashSet<>(
                            instances.subList(
                                    from, Math.min(instances.size(), from + SLICES_PER_SCAN))));
        }
        storeSlices(planId, plan, groups, ttl, store);
        // What the all-applied barrier proves reports against, while the plan is in memory: the
        // verifier reads this instead of decoding the whole plan in the session's critical path.
        byte[] expected = Compression.deflate(ObjectVerification.encodeExpected(plan));
        String loadJson = StoredPlanLoads.of(PlanLoads.of(plan)).write(json);
        String summaryJson = StoredPlanSummary.of(summary).write(json);
        if (!store) {
            return summary;
        }
        guard.run(() -> bytes.opsForValue().set(keys.planExpected(planId), expected, ttl));
        guard.run(() -> redis.opsForValue().set(keys.planLoad(planId), loadJson, ttl));
        guard.run(() -> redis.opsForValue().set(keys.planSummary(planId), summaryJson, ttl));
        log.info(
                "plan {} computed in {} ms: {} instances, {} store bytes, {} delivered, {} encoded",
                planId,
                computeMs,
                instances.size(),
                report.readBytes(),
                report.deliveredBytes(),
                summary.getEncodedBytes());
        return summary;
    }

    /** Encodes, gzips and stores the slices of each group, {@link #SCANS_AT_ONCE} at a time. */
    private void storeSlices(
            String planId, Plan plan, List<Set<String>> groups, Duration ttl, boolean store) {
        int threads = Math.min(SCANS_AT_ONCE, groups.size());
        if (threads <= 1) {
            groups.forEach(group -> storeSlices(planId, plan, group, ttl, store));
            return;
        }
        ExecutorService scans =
                Executors.newFixedThreadPool(threads, DaemonThreads.named("plan-slices"));
        try {
            List<Future<?>> running = new ArrayList<>();
            for (Set<String> group : groups) {
                running.add(scans.submit(() -> storeSlices(planId, plan, group, ttl, store)));
            }
            for (Future<?> f : running) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException r) {
                        throw r;
                    }
                    throw new IllegalStateException(e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw PlanProblems.PLAN_BUSY.exception(
                            "interrupted while the slices of plan " + planId + " were stored");
                }
            }
        } finally {
            scans.shutdownNow();
        }
    }

    private void storeSlices(
            String planId, Plan plan, Set<String> group, Duration ttl, boolean store) {
        for (Map.Entry<String, byte[]> e : Slice.encoded(plan, group).entrySet()) {
            byte[] slice = Compression.gzip(e.getValue());
            e.setValue(null);
            if (!store) {
                continue;
            }
            guard.run(
                    () -> bytes.opsForValue().set(keys.planSlice(planId, e.getKey()), slice, ttl));
        }
    }

    private PlanSummary cachedSummary(String planId) {
        // All parts share one TTL from the moment they were written; the summary, written last,
        // also expires last, so a visible summary never points at expired encodings.
        String key = keys.planSummary(planId);
        String value = guard.call(() -> redis.opsForValue().get(key));
        return value == null ? null : StoredPlanSummary.read(json, key, value).toApi();
    }

    /** A copy marked as found: the computing request's own summary is shared with joiners. */
    private PlanSummary asCached(PlanSummary summary) {
        return StoredPlanSummary.of(summary).toApi().cached(true);
    }

    private static PlanSummary join(CompletableFuture<PlanSummary> future) {
        try {
            return future.join();
        } catch (CompletionException ex) {
            if (ex.getCause() instanceof RelayException relay) {
                throw relay;
            }
            throw ex;
        }
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw PlanProblems.PLAN_BUSY.exception("interrupted while waiting for plan");
        }
    }

    private static RuntimeException planNotFound(String planId) {
        return PlanProblems.PLAN_NOT_FOUND
                .exception("no plan " + planId + " is cached")
                .with("planId", planId);
    }
}
