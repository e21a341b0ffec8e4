package io.weightrelay.control.generation;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationManifest;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.Lease;
import io.weightrelay.api.control.model.OpenGenerationRequest;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.api.control.model.RegisterObjectsRequest;
import io.weightrelay.api.control.model.RegisterObjectsResponse;
import io.weightrelay.api.control.model.RegisteredObject;
import io.weightrelay.api.control.model.SourceManifest;
import io.weightrelay.api.control.model.StoredFragment;
import io.weightrelay.api.control.model.Topology;
import io.weightrelay.control.assignment.AssignmentService;
import io.weightrelay.control.redis.Compression;
import io.weightrelay.control.redis.RedisEvents;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Script;
import io.weightrelay.control.store.ObjectStore;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.service.problem.CommonProblems;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * The generation lifecycle in Redis. Every state change is one Lua script (see {@code scripts/});
 * reads are plain commands. Manifests are stored once per digest (JSON plus a hash of expected
 * fragment sizes) and shared by every generation that publishes the same model layout.
 */
@Service
public class GenerationService {

    private static final Logger log = LoggerFactory.getLogger(GenerationService.class);
    private static final int SIZES_CHUNK = 10_000;
    private static final int MANIFEST_CACHE_MAX = 64;
    private static final int ENCODED_CACHE_MAX = 8;
    private static final int VIEW_CACHE_MAX = 4;

    private static final Script OPEN = Script.load("open");
    private static final Script REGISTER = Script.load("register");
    private static final Script COMMIT = Script.load("commit");
    private static final Script ABORT = Script.load("abort");
    private static final Script LOSE = Script.load("lose");
    private static final Script LEASE = Script.load("lease");
    private static final Script GC_MARK = Script.load("gc-mark");
    private static final Script GC_FINISH = Script.load("gc-finish");
    private static final Script ACTIVATE = Script.load("activate");
    private static final Script RESTORE = Script.load("restore");

    /** A generation as stored, with what other features need beyond the REST view. */
    public record StoredGeneration(Generation view, String manifestDigest, Topology trainers) {
        public long id() {
            return view.getGeneration();
        }

        public GenerationState state() {
            return view.getState();
        }

        public boolean committed() {
            return state() == GenerationState.ACTIVE || state() == GenerationState.RETIRED;
        }

        /**
         * Refuses a generation whose bytes are gone (LOST): nothing may be planned, loaded or saved
         * from it.
         */
        public StoredGeneration requireNotLost() {
            if (state() == GenerationState.LOST) {
                throw GenerationProblems.GENERATION_LOST
                        .exception(
                                "generation "
                                        + id()
                                        + " of "
                                        + view.getModel()
                                        + " is LOST: "
                                        + view.getLostReason())
                        .with("generation", id());
            }
            return this;
        }
    }

    /** Result of opening: the body and whether this call created the generation. */
    public record Opened(OpenedGeneration body, boolean created) {}

    private final StringRedisTemplate redis;
    private final RedisTemplate<String, byte[]> bytes;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final ScriptCall scripts;
    private final RedisEvents events;
    private final JsonMapper json;
    private final ObjectStore store;
    private final AssignmentService assignments;
    private final GenerationProperties properties;
    private final MeterRegistry meters;
    private final Clock clock;
    private final Map<String, io.weightrelay.reshard.manifest.SourceManifest> manifestCache =
            new ConcurrentHashMap<>();
    // Encoded manifests as served: every publisher and loader of a generation reads the same
    // bytes, so they are read from Redis and inflated once (per key, concurrent readers wait).
    private final Map<String, byte[]> encodedCache = new ConcurrentHashMap<>();
    // The same, gzip-compressed once for readers that accept it: a Kimi-K2 manifest is 12 MB and
    // about 1 MB compressed, and every loader of a group reads it at prepare, all at once.
    private final Map<String, byte[]> gzippedCache = new ConcurrentHashMap<>();
    // The JSON view, built once per generation (keys name the generation) for its readers.
    private final Map<String, GenerationManifest> manifestViews = new ConcurrentHashMap<>();

    GenerationService(
            StringRedisTemplate redis,
            RedisTemplate<String, byte[]> bytesRedisTemplate,
            RedisKeys keys,
            RedisGuard guard,
            ScriptCall scripts,
            RedisEvents events,
            JsonMapper json,
            ObjectStore store,
            AssignmentService assignments,
            GenerationProperties properties,
            MeterRegistry meters,
            Clock clock) {
        this.redis = redis;
        this.bytes = bytesRedisTemplate;
        this.keys = keys;
        this.guard = guard;
        this.scripts = scripts;
        this.events = events;
        this.json = json;
        this.store = store;
        this.assignments = assignments;
        this.properties = properties;
        this.meters = meters;
        this.clock = clock;
    }

    // ---- open, register, commit, abort ------------------------------------------------------

    public Opened open(String model, OpenGenerationRequest request) {
        requireSameModel(model, request.getManifest().getModel());
        ManifestMapper.checkTensors(request.getManifest());
        // What is stored, served and digested is the manifest with its FP8 rule applied.
        SourceManifest manifest = ManifestMapper.applyRule(request.getManifest());
        io.weightrelay.reshard.manifest.SourceManifest source = ManifestMapper.toReshard(manifest);
        if (source.fragments().size() > properties.maxObjects()) {
            throw GenerationProblems.MANIFEST_TOO_LARGE.exception(
                    "the manifest implies "
                            + source.fragments().size()
                            + " objects; at most "
                            + properties.maxObjects()
                            + " are accepted");
        }
        io.weightrelay.reshard.topology.Topology trainers =
                ManifestMapper.trainerTopology(request.getTrainerTopology());
        String digest = source.digest();
        String topologyJson = json.writeValueAsString(request.getTrainerTopology());
        List<Object> result = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            storeManifest(model, digest, manifest, source);
            result =
                    script(
                            OPEN,
                            model,
                            String.valueOf(request.getTrainerStep()),
                            digest,
                            trainers.digest(),
                            String.valueOf(source.fragments().size()),
                            String.valueOf(source.totalBytes()),
                            now().toString(),
                            topologyJson,
                            String.valueOf(
                                    request.getAfterGeneration() == null
                                            ? 0
                                            : request.getAfterGeneration()));
            if (!"manifest-missing".equals(code(result))) {
                break;
            }
            // Garbage collection dropped the manifest between our write and the open: write again.
        }
        long id;
        switch (code(result)) {
            case "created", "existing" -> id = Long.parseLong(item(result, 1));
            case "step-conflict" ->
                    throw GenerationProblems.TRAINER_STEP_CONFLICT
                            .exception(
                                    "trainer step "
                                            + request.getTrainerStep()
                                            + " already opened generation "
                                            + item(result, 1)
                                            + " with another manifest or trainer topology")
                            .with("generation", Long.parseLong(item(result, 1)));
            default -> throw unexpected("open", result);
        }
        // The planner's first resolve needs this manifest: decoding it again from Redis costs
        // about a second at Kimi-K2 scale.
        cacheSource(model + ":" + digest, source);
        Generation generation = get(model, id);
        OpenedGeneration body =
                new OpenedGeneration(generation, assignments.assignment(source, digest, trainers));
        return new Opened(body, "created".equals(code(result)));
    }

    public RegisterObjectsResponse register(
            String model, long generation, RegisterObjectsRequest request) {
        List<RegisteredObject> objects = request.getObjects();
        if (objects.size() > properties.registerBatchMax()) {
            throw CommonProblems.PAYLOAD_TOO_LARGE.exception(
                    "at most " + properties.registerBatchMax() + " objects per batch");
        }
        String prefix = model + "/" + generation + "/";
        List<String> args = new ArrayList<>(4 + objects.size() * 4);
        args.add(keys.prefix());
        args.add(model);
        args.add(String.valueOf(generation));
        args.add(String.valueOf(objects.size()));
        Map<String, String> seen = new HashMap<>();
        for (RegisteredObject o : objects) {
            if (!o.getKey().startsWith(prefix) || o.getKey().length() == prefix.length()) {
                throw GenerationProblems.UNKNOWN_OBJECT
                        .exception(
                                "object key '"
                                        + o.getKey()
                                        + "' is not of the form "
                                        + prefix
                                        + "{fragment}")
                        .with("key", o.getKey());
            }
            String fragment = o.getKey().substring(prefix.length());
            String segments = o.getSegments() == null ? "" : String.join(",", o.getSegments());
            if (segments.contains("|")) {
                throw CommonProblems.INVALID_REQUEST.exception("segment names may not contain '|'");
            }
            String value = o.getSize() + "|" + o.getChecksum();
            String before = seen.put(fragment, value);
            if (before != null && !before.equals(value)) {
                throw GenerationProblems.OBJECT_CONFLICT
                        .exception(
                                "object '" + o.getKey() + "' appears twice with different values")
                        .with("key", o.getKey());
            }
            args.add(fragment);
            args.add(String.valueOf(o.getSize()));
            args.add(o.getChecksum());
            args.add(segments);
        }
        List<Object> result = scriptArgs(REGISTER, args);
        return switch (code(result)) {
            case "ok" ->
                    new RegisterObjectsResponse(
                            Integer.parseInt(item(result, 1)),
                            Long.parseLong(item(result, 2)),
                            Long.parseLong(item(result, 3)));
            case "not-found" -> throw notFound(model, generation);
            case "not-open" -> throw notOpen(model, generation, item(result, 1));
            case "unknown-object" ->
                    throw GenerationProblems.UNKNOWN_OBJECT
                            .exception(
                                    "object '"
                                            + prefix
                                            + item(result, 1)
                                            + "' is not a fragment of the manifest")
                            .with("key", prefix + item(result, 1));
            case "size-mismatch" ->
                    throw GenerationProblems.OBJECT_SIZE_MISMATCH
                            .exception(
                                    "object '"
                                            + prefix
                                            + item(result, 1)
                                            + "' has "
                                            + item(result, 3)
                                            + " bytes; the manifest says "
                                            + item(result, 2))
                            .with("key", prefix + item(result, 1))
                            .with("expectedSize", Long.parseLong(item(result, 2)));
            case "object-conflict" ->
                    throw GenerationProblems.OBJECT_CONFLICT
                            .exception(
                                    "object '"
                                            + prefix
                                            + item(result, 1)
                                            + "' is already registered with size "
                                            + item(result, 2)
                                            + " and checksum "
                                            + item(result, 3))
                            .with("key", prefix + item(result, 1));
            default -> throw unexpected("register", result);
        };
    }

    /**
     * The meters of one committed generation (a retried commit that found it committed records
     * nothing again): {@code relay.generations.committed}, and per model, one sample per
     * generation, its bytes ({@code relay.generations.published.bytes}) and the seconds from open
     * to commit ({@code relay.generations.publish}), which is how long the trainer's publish took.
     * No meter has a generation tag, so their number does not grow with every generation.
     */
    private void published(Generation g) {
        String model = g.getModel();
        meters.counter("relay.generations.committed", "model", model).increment();
        DistributionSummary.builder("relay.generations.published.bytes")
                .baseUnit("bytes")
                .description("bytes of each committed generation")
                .tag("model", model)
                .register(meters)
                .record(g.getBytesExpected());
        if (g.getOpenedAt() != null && g.getCommittedAt() != null) {
            Timer.builder("relay.generations.publish")
                    .description("open to commit of each committed generation")
                    .tag("model", model)
                    .register(meters)
                    .record(Duration.between(g.getOpenedAt(), g.getCommittedAt()));
        }
    }

    public Generation commit(String model, long generation) {
        String nonce = UUID.randomUUID().toString();
        List<Object> result = script(COMMIT, model, String.valueOf(generation), nonce);
        switch (code(result)) {
            case "ok", "ok-retry" -> {
                Generation committed = get(model, generation);
                if ("ok".equals(code(result))) {
                    published(committed);
                }
                log.info(
                        "model {}: generation {} committed and active (previous: {})",
                        model,
                        generation,
                        result.size() > 1 ? item(result, 1) : "?");
                return committed;
            }
            case "not-found" -> throw notFound(model, generation);
            case "not-open" ->
                    throw GenerationProblems.COMMIT_CONFLICT
                            .exception(
                                    "generation "
                                            + generation
                                            + " is "
                                            + item(result, 1)
                                            + ", not OPEN; nothing changed")
                            .with("state", item(result, 1));
            case "stale" ->
                    throw GenerationProblems.COMMIT_CONFLICT
                            .exception(
                                    "newer generation "
                                            + item(result, 1)
                                            + " is already active; nothing changed")
                            .with("activeGeneration", Long.parseLong(item(result, 1)));
            case "incomplete" -> {
                long missing = Long.parseLong(item(result, 1));
                long wrong = Long.parseLong(item(result, 2));
                List<String> sample = new ArrayList<>();
                for (int i = 3; i < result.size(); i++) {
                    sample.add(item(result, i));
                }
                throw GenerationProblems.GENERATION_INCOMPLETE
                        .exception(
                                missing
                                        + " object(s) missing and "
                                        + wrong
                                        + " registered with a wrong size or no checksum; the"
                                        + " active generation is unchanged")
                        .with("missing", missing)
                        .with("wrong", wrong)
                        .with("objects", sample);
            }
            default -> throw unexpected("commit", result);
        }
    }

    public Generation abort(String model, long generation, String reason) {
        List<Object> result =
                script(
                        ABORT,
                        model,
                        String.valueOf(generation),
                        reason == null ? "" : reason,
                        now().toString());
        switch (code(result)) {
            case "ok" -> {
                if ("aborted".equals(item(result, 1))) {
                    meters.counter("relay.generations.aborted", "model", model).increment();
                }
                long removed = store.remove(objectKeys(model, generation, item(result, 2)));
                log.info(
                        "model {}: generation {} aborted ({}), {} store object(s) removed",
                        model,
                        generation,
                        reason,
                        removed);
                return get(model, generation);
            }
            case "not-found" -> throw notFound(model, generation);
            case "not-open" -> throw notOpen(model, generation, item(result, 1));
            default -> throw unexpected("abort", result);
        }
    }

    /**
     * Marks a generation whose bytes in {@code segment} are gone (its owner re-created it after a
     * crash): committed -> LOST, never leased or loaded again, so loaders stay on what they serve;
     * if it was active, the newest earlier whole generation becomes active again (restarted and new
     * engines load that); open -> ABORTED with its remaining objects removed. Idempotent.
     */
    public Generation lose(
            String model, long generation, String segment, long objects, String why) {
        String reason =
                objects
                        + " object(s) in segment '"
                        + segment
                        + "' are gone (its owner re-created it)"
                        + (why == null || why.isBlank() ? "" : ": " + why);
        List<Object> result =
                script(LOSE, model, String.valueOf(generation), reason, now().toString());
        switch (code(result)) {
            case "ok" -> {
                String outcome = item(result, 1);
                if ("lost".equals(outcome)) {
                    meters.counter("relay.generations.lost", "model", model).increment();
                    String back = item(result, 4);
                    log.warn(
                            "model {}: generation {} is LOST: {}; {}",
                            model,
                            generation,
                            reason,
                            back.isEmpty()
                                    ? "the active generation is unchanged"
                                    : "generation " + back + " (whole) is active again");
                } else if ("aborted".equals(outcome)) {
                    meters.counter("relay.generations.aborted", "model", model).increment();
                    long removed = store.remove(objectKeys(model, generation, item(result, 3)));
                    log.warn(
                            "model {}: open generation {} aborted, {} store object(s) removed: {}",
                            model,
                            generation,
                            removed,
                            reason);
                }
                return get(model, generation);
            }
            case "not-found" -> throw notFound(model, generation);
            default -> throw unexpected("lose", result);
        }
    }

    // ---- reads ---------------------------------------------------------------------------------

    public Generation get(String model, long generation) {
        return load(model, generation).view();
    }

    public StoredGeneration load(String model, long generation) {
        return find(model, generation).orElseThrow(() -> notFound(model, generation));
    }

    public Optional<StoredGeneration> find(String model, long generation) {
        Map<Object, Object> hash =
                guard.call(() -> redis.opsForHash().entries(keys.generation(model, generation)));
        if (hash.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(toStored(hash));
    }

    public List<Generation> list(String model, GenerationState state, int limit) {
        requireModel(model);
        List<String> ids =
                guard.call(
                        () ->
                                new ArrayList<>(
                                        redis.opsForZSet()
                                                .reverseRange(keys.generations(model), 0, -1)));
        List<Generation> out = new ArrayList<>();
        for (String id : ids) {
            if (out.size() >= limit) {
                break;
            }
            find(model, Long.parseLong(id))
                    .map(StoredGeneration::view)
                    .filter(g -> state == null || g.getState() == state)
                    .ifPresent(out::add);
        }
        return out;
    }

    public Generation active(String model) {
        return activeIfAny(model)
                .orElseThrow(
                        () -> {
                            requireModel(model);
                            return GenerationProblems.NO_ACTIVE_GENERATION.exception(
                                    "model " + model + " has no active generation");
                        });
    }

    public Optional<Generation> activeIfAny(String model) {
        String id = guard.call(() -> redis.opsForValue().get(keys.active(model)));
        if (id == null) {
            return Optional.empty();
        }
        return find(model, Long.parseLong(id)).map(StoredGeneration::view);
    }

    /**
     * Waits until a generation newer than {@code after} is active. Wakes on the model's Redis
     * channel; re-reads at least every few seconds so a message lost in an outage costs little.
     */
    public Optional<Generation> awaitNewerThan(String model, long after, Duration wait) {
        Instant deadline = clock.instant().plus(wait);
        try (RedisEvents.Waiter waiter = events.waiter(keys.activeChannel(model))) {
            while (true) {
                Optional<Generation> active = activeIfAny(model);
                if (active.isPresent() && active.get().getGeneration() > after) {
                    return active;
                }
                Duration left = Duration.between(clock.instant(), deadline);
                if (left.isNegative() || left.isZero()) {
                    return Optional.empty();
                }
                waiter.await(
                        left.compareTo(Duration.ofSeconds(5)) < 0 ? left : Duration.ofSeconds(5));
            }
        }
    }

    public GenerationManifest manifest(String model, long generation) {
        StoredGeneration g = load(model, generation);
        String cacheKey = model + ":" + generation + ":" + g.manifestDigest();
        GenerationManifest cached = manifestViews.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        if (manifestViews.size() >= VIEW_CACHE_MAX) {
            manifestViews.clear();
        }
        return manifestViews.computeIfAbsent(cacheKey, k -> manifestView(model, generation, g));
    }

    private GenerationManifest manifestView(String model, long generation, StoredGeneration g) {
        SourceManifest api = apiManifest(model, g.manifestDigest());
        io.weightrelay.reshard.manifest.SourceManifest source = sourceManifest(model, g);
        List<StoredFragment> fragments = new ArrayList<>(source.fragments().size());
        for (io.weightrelay.reshard.manifest.StoredFragment f : source.fragments()) {
            fragments.add(
                    new StoredFragment(
                            ObjectKeys.key(model, generation, f.fragment()),
                            f.tensor(),
                            boxed(f.offset().dims()),
                            boxed(f.shape().dims()),
                            f.bytes()));
        }
        return new GenerationManifest(api, g.manifestDigest(), fragments);
    }

    /**
     * A generation's manifest in reshard's binary encoding ({@link
     * io.weightrelay.reshard.manifest.SourceManifest#encode()}), as served to publishers and
     * loaders; kept in memory per digest after the first read.
     */
    public byte[] encodedManifest(String model, long generation) {
        return encoded(model, load(model, generation).manifestDigest());
    }

    /** {@link #encodedManifest} as one gzip member, compressed once per manifest. */
    public byte[] gzippedManifest(String model, long generation) {
        String digest = load(model, generation).manifestDigest();
        String cacheKey = model + ":" + digest;
        byte[] cached = gzippedCache.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        if (gzippedCache.size() >= ENCODED_CACHE_MAX) {
            gzippedCache.clear();
        }
        return gzippedCache.computeIfAbsent(
                cacheKey, k -> Compression.gzip(encoded(model, digest)));
    }

    private byte[] encoded(String model, String digest) {
        String cacheKey = model + ":" + digest;
        byte[] cached = encodedCache.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        if (encodedCache.size() >= ENCODED_CACHE_MAX) {
            encodedCache.clear();
        }
        return encodedCache.computeIfAbsent(
                cacheKey,
                k -> {
                    byte[] deflated =
                            guard.call(
                                    () ->
                                            bytes.opsForValue()
                                                    .get(keys.manifestEncoded(model, digest)));
                    if (deflated != null) {
                        return Compression.inflate(deflated);
                    }
                    // Opened before manifests were stored encoded: encode from the JSON once.
                    return ManifestMapper.toReshard(apiManifest(model, digest)).encode();
                });
    }

    /**
     * The planner's view of a generation's manifest (cached per digest: manifests are immutable).
     */
    public io.weightrelay.reshard.manifest.SourceManifest sourceManifest(
            String model, StoredGeneration generation) {
        String cacheKey = model + ":" + generation.manifestDigest();
        io.weightrelay.reshard.manifest.SourceManifest cached = manifestCache.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        io.weightrelay.reshard.manifest.SourceManifest source =
                io.weightrelay.reshard.manifest.SourceManifest.decode(
                        encoded(model, generation.manifestDigest()));
        cacheSource(cacheKey, source);
        return source;
    }

    private void cacheSource(
            String cacheKey, io.weightrelay.reshard.manifest.SourceManifest source) {
        if (manifestCache.size() >= MANIFEST_CACHE_MAX) {
            manifestCache.clear();
        }
        manifestCache.putIfAbsent(cacheKey, source);
    }

    /** Store keys of every manifest object of a generation. */
    public List<String> objectKeys(String model, long generation, String manifestDigest) {
        Set<Object> fragments =
                guard.call(
                        () -> redis.opsForHash().keys(keys.manifestSizes(model, manifestDigest)));
        List<String> out = new ArrayList<>(fragments.size());
        for (Object f : fragments) {
            out.add(ObjectKeys.key(model, generation, (String) f));
        }
        Collections.sort(out);
        return out;
    }

    /** Registered objects: store key to the segment hints their publisher reported. */
    public Map<String, List<String>> registeredSegments(String model, long generation) {
        Map<Object, Object> objects =
                guard.call(() -> redis.opsForHash().entries(keys.objects(model, generation)));
        Map<String, List<String>> out = new LinkedHashMap<>();
        objects.forEach(
                (f, v) -> {
                    String[] parts = ((String) v).split("\\|", -1);
                    List<String> segments =
                            parts.length < 3 || parts[2].isEmpty()
                                    ? List.of()
                                    : Arrays.asList(parts[2].split(","));
                    out.put(ObjectKeys.key(model, generation, (String) f), segments);
                });
        return out;
    }

    /**
     * Registered bytes and objects of a generation per segment its publisher named (an object named
     * in several segments counts in each): one read of its object hash.
     */
    public Map<String, long[]> bytesPerSegment(String model, long generation) {
        Map<Object, Object> objects =
                guard.call(() -> redis.opsForHash().entries(keys.objects(model, generation)));
        Map<String, long[]> out = new HashMap<>();
        objects.forEach(
                (f, v) -> {
                    String[] parts = ((String) v).split("\\|", -1);
                    if (parts.length < 3 || parts[2].isEmpty()) {
                        return;
                    }
                    long size = Long.parseLong(parts[0]);
                    for (String segment : parts[2].split(",")) {
                        long[] sum = out.computeIfAbsent(segment, x -> new long[2]);
                        sum[0] += size;
                        sum[1]++;
                    }
                });
        return out;
    }

    // ---- leases and garbage collection ----------------------------------------------------------

    public Lease lease(String model, long generation, String holder, int ttlSeconds) {
        Instant now = clock.instant();
        Instant expiry = now.plusSeconds(ttlSeconds);
        List<Object> result =
                script(
                        LEASE,
                        model,
                        String.valueOf(generation),
                        holder,
                        String.valueOf(expiry.toEpochMilli()),
                        String.valueOf(now.toEpochMilli()));
        return switch (code(result)) {
            case "ok" -> new Lease(model, generation, holder, expiry.atOffset(ZoneOffset.UTC));
            case "not-found" -> throw notFound(model, generation);
            case "not-leasable" ->
                    throw GenerationProblems.GENERATION_NOT_LEASABLE
                            .exception(
                                    "generation "
                                            + generation
                                            + " is "
                                            + item(result, 1)
                                            + " and can no longer be leased")
                            .with("state", item(result, 1));
            default -> throw unexpected("lease", result);
        };
    }

    public void release(String model, long generation, String holder) {
        load(model, generation);
        guard.call(() -> redis.opsForZSet().remove(keys.leases(model, generation), holder));
    }

    public GcReport collectGarbage(String model) {
        requireModel(model);
        List<Object> result =
                script(GC_MARK, model, String.valueOf(clock.instant().toEpochMilli()));
        int n = Integer.parseInt(item(result, 1));
        List<Long> collected = new ArrayList<>();
        List<Long> kept = new ArrayList<>();
        for (int i = 2; i < result.size(); i++) {
            (i < 2 + n ? collected : kept).add(Long.parseLong(item(result, i)));
        }
        long removed = 0;
        List<Long> done = new ArrayList<>();
        for (long generation : collected) {
            Optional<StoredGeneration> g = find(model, generation);
            if (g.isEmpty()) {
                continue;
            }
            removed += store.remove(objectKeys(model, generation, g.get().manifestDigest()));
            List<Object> finish = script(GC_FINISH, model, String.valueOf(generation));
            if ("ok".equals(code(finish))) {
                done.add(generation);
            }
        }
        if (!done.isEmpty()) {
            meters.counter("relay.generations.collected", "model", model).increment(done.size());
            log.info(
                    "model {}: collected generations {} ({} store objects removed), kept {}",
                    model,
                    done,
                    removed,
                    kept);
        }
        return new GcReport(done, kept, removed);
    }

    /** Every model that ever opened a generation. */
    public Set<String> models() {
        Set<String> models = guard.call(() -> redis.opsForSet().members(keys.models()));
        return models == null ? Set.of() : new HashSet<>(models);
    }

    /** Makes a committed generation active again (checkpoint restore). */
    public Generation activate(String model, long generation) {
        List<Object> result = script(ACTIVATE, model, String.valueOf(generation));
        return switch (code(result)) {
            case "ok" -> get(model, generation);
            case "not-found" -> throw notFound(model, generation);
            case "not-committed" ->
                    throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                            "generation " + generation + " is " + item(result, 1));
            default -> throw unexpected("activate", result);
        };
    }

    /** The source manifest of a generation as the trainer sent it (a checkpoint keeps it). */
    public SourceManifest apiManifest(String model, long generation) {
        return apiManifest(model, load(model, generation).manifestDigest());
    }

    /** What a checkpoint restore registers: a committed generation as it was saved. */
    public record Restored(
            String model,
            long generation,
            long trainerStep,
            SourceManifest manifest,
            String manifestDigest,
            Topology trainerTopology,
            String trainerTopologyDigest,
            OffsetDateTime committedAt) {}

    /** The outcome of {@link #registerRestored}: the generation and whether it became active. */
    public record RestoreOutcome(Generation generation, boolean active, String other) {}

    /**
     * Registers a generation restored from a checkpoint, keeping its id: the manifest (checked
     * against its digest), every object ({@code objects}: store key to {@code size|checksum|
     * segments}) and the record, then, in one atomic step, the objects, the trainer step and the
     * active pointer: active, or retired when a newer generation is active. The generation-id
     * counter is raised past it.
     */
    public RestoreOutcome registerRestored(Restored r, Map<String, String> objects) {
        io.weightrelay.reshard.manifest.SourceManifest source =
                ManifestMapper.toReshard(r.manifest());
        if (!source.digest().equals(r.manifestDigest())) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "the checkpoint's manifest has digest "
                            + source.digest()
                            + ", its record says "
                            + r.manifestDigest());
        }
        String model = r.model();
        String prefix = model + "/" + r.generation() + "/";
        storeManifest(model, r.manifestDigest(), r.manifest(), source);
        String staging = keys.objects(model, r.generation()) + ":restoring:" + UUID.randomUUID();
        List<Map.Entry<String, String>> entries = new ArrayList<>(objects.entrySet());
        for (int start = 0; start < entries.size(); start += SIZES_CHUNK) {
            Map<String, String> chunk = new HashMap<>();
            for (int i = start; i < Math.min(entries.size(), start + SIZES_CHUNK); i++) {
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
                r.trainerTopology() == null ? "" : json.writeValueAsString(r.trainerTopology());
        List<Object> result =
                script(
                        RESTORE,
                        model,
                        String.valueOf(r.generation()),
                        String.valueOf(r.trainerStep()),
                        r.manifestDigest(),
                        r.trainerTopologyDigest() == null ? "" : r.trainerTopologyDigest(),
                        String.valueOf(source.fragments().size()),
                        String.valueOf(source.totalBytes()),
                        r.committedAt() == null ? "" : r.committedAt().toString(),
                        topologyJson,
                        staging);
        return switch (code(result)) {
            case "active" ->
                    new RestoreOutcome(
                            get(model, r.generation()),
                            true,
                            item(result, 1).isEmpty() ? null : item(result, 1));
            case "retired" ->
                    new RestoreOutcome(get(model, r.generation()), false, item(result, 1));
            case "manifest-missing" ->
                    throw CommonProblems.INTERNAL.exception(
                            "the manifest of the restored generation vanished before it was"
                                    + " registered; retry the restore");
            case "incomplete" ->
                    throw CommonProblems.INVALID_REQUEST.exception(
                            "the checkpoint lists "
                                    + item(result, 1)
                                    + " objects, the manifest "
                                    + source.fragments().size());
            case "conflict" ->
                    throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                            "generation "
                                    + r.generation()
                                    + " of model "
                                    + model
                                    + " exists ("
                                    + item(result, 1)
                                    + ") with another manifest "
                                    + item(result, 2)
                                    + "; this checkpoint is of another history");
            case "busy" ->
                    throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                            "generation "
                                    + r.generation()
                                    + " is "
                                    + item(result, 1)
                                    + " or being collected; it cannot be restored now");
            case "step-conflict" ->
                    throw GenerationProblems.TRAINER_STEP_CONFLICT
                            .exception(
                                    "trainer step "
                                            + r.trainerStep()
                                            + " belongs to generation "
                                            + item(result, 1))
                            .with("generation", Long.parseLong(item(result, 1)));
            default -> throw unexpected("restore", result);
        };
    }

    public void requireModel(String model) {
        Boolean known = guard.call(() -> redis.opsForSet().isMember(keys.models(), model));
        if (!Boolean.TRUE.equals(known)) {
            throw GenerationProblems.MODEL_NOT_FOUND
                    .exception("model " + model + " has never opened a generation")
                    .with("model", model);
        }
    }

    public static void requireSameModel(String pathModel, String bodyModel) {
        if (!pathModel.equals(bodyModel)) {
            throw GenerationProblems.MODEL_MISMATCH.exception(
                    "the path names model " + pathModel + " but the body names " + bodyModel);
        }
    }

    // ---- helpers -------------------------------------------------------------------------------

    private void storeManifest(
            String model,
            String digest,
            SourceManifest manifest,
            io.weightrelay.reshard.manifest.SourceManifest source) {
        String sizesKey = keys.manifestSizes(model, digest);
        if (Boolean.TRUE.equals(guard.call(() -> redis.hasKey(sizesKey)))) {
            return;
        }
        String manifestJson = json.writeValueAsString(manifest);
        guard.run(() -> redis.opsForValue().set(keys.manifest(model, digest), manifestJson));
        byte[] encoded = source.encode();
        byte[] deflated = Compression.deflate(encoded);
        guard.run(() -> bytes.opsForValue().set(keys.manifestEncoded(model, digest), deflated));
        encodedCache.putIfAbsent(model + ":" + digest, encoded);
        // Sizes go to a private key first and appear under their real name in one RENAME, so a
        // commit never checks against a half-written list.
        String staging = sizesKey + ":staging:" + UUID.randomUUID();
        List<io.weightrelay.reshard.manifest.StoredFragment> fragments = source.fragments();
        for (int start = 0; start < fragments.size(); start += SIZES_CHUNK) {
            Map<String, String> chunk = new HashMap<>();
            for (int i = start; i < Math.min(fragments.size(), start + SIZES_CHUNK); i++) {
                chunk.put(fragments.get(i).fragment(), String.valueOf(fragments.get(i).bytes()));
            }
            guard.run(() -> redis.opsForHash().putAll(staging, chunk));
        }
        guard.run(() -> redis.rename(staging, sizesKey));
    }

    private SourceManifest apiManifest(String model, String digest) {
        String manifestJson =
                guard.call(() -> redis.opsForValue().get(keys.manifest(model, digest)));
        if (manifestJson == null) {
            throw CommonProblems.INTERNAL.exception(
                    "manifest " + digest + " of model " + model + " is missing from Redis");
        }
        return json.readValue(manifestJson, SourceManifest.class);
    }

    private StoredGeneration toStored(Map<Object, Object> h) {
        Generation g =
                new Generation(
                        str(h, "model"),
                        Long.parseLong(str(h, "generation")),
                        GenerationState.fromValue(str(h, "state")),
                        Long.parseLong(str(h, "trainerStep")),
                        str(h, "manifestDigest"),
                        Long.parseLong(str(h, "objectsExpected")),
                        Long.parseLong(str(h, "objectsRegistered")),
                        Long.parseLong(str(h, "bytesExpected")));
        g.setTrainerTopologyDigest(str(h, "trainerTopologyDigest"));
        g.setOpenedAt(time(h, "openedAt"));
        g.setCommittedAt(time(h, "committedAt"));
        g.setRetiredAt(time(h, "retiredAt"));
        String reason = str(h, "abortReason");
        if (reason != null && !reason.isEmpty()) {
            g.setAbortReason(reason);
        }
        g.setLostAt(time(h, "lostAt"));
        g.setLostReason(str(h, "lostReason"));
        g.setCorruptObject(str(h, "corruptObject"));
        String topology = str(h, "trainerTopology");
        return new StoredGeneration(
                g,
                str(h, "manifestDigest"),
                topology == null ? null : json.readValue(topology, Topology.class));
    }

    private static String str(Map<Object, Object> h, String field) {
        Object v = h.get(field);
        return v == null ? null : v.toString();
    }

    /**
     * A stamp is ISO-8601 when written by this JVM, or epoch microseconds when a script took it
     * from the Redis server clock (the stamps whose order matters across instances).
     */
    private static OffsetDateTime time(Map<Object, Object> h, String field) {
        String v = str(h, field);
        if (v == null || v.isEmpty()) {
            return null;
        }
        if (v.chars().allMatch(Character::isDigit)) {
            long micros = Long.parseLong(v);
            return Instant.ofEpochSecond(micros / 1_000_000, (micros % 1_000_000) * 1_000)
                    .atOffset(ZoneOffset.UTC);
        }
        return OffsetDateTime.parse(v);
    }

    private static List<Long> boxed(long[] values) {
        List<Long> out = new ArrayList<>(values.length);
        for (long v : values) {
            out.add(v);
        }
        return out;
    }

    private OffsetDateTime now() {
        return OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC);
    }

    private List<Object> script(Script script, String model, String... rest) {
        List<String> args = new ArrayList<>(rest.length + 2);
        args.add(keys.prefix());
        args.add(model);
        args.addAll(Arrays.asList(rest));
        return scriptArgs(script, args);
    }

    private List<Object> scriptArgs(Script script, List<String> args) {
        return scripts.run(script, List.of(), args).values();
    }

    static String code(List<Object> result) {
        return result == null || result.isEmpty() ? "" : String.valueOf(result.get(0));
    }

    static String item(List<Object> result, int index) {
        return String.valueOf(result.get(index));
    }

    private static RuntimeException notFound(String model, long generation) {
        return GenerationProblems.GENERATION_NOT_FOUND
                .exception("model " + model + " has no generation " + generation)
                .with("model", model)
                .with("generation", generation);
    }

    private static RuntimeException notOpen(String model, long generation, String state) {
        return GenerationProblems.GENERATION_NOT_OPEN
                .exception("generation " + generation + " of model " + model + " is " + state)
                .with("state", state);
    }

    private static RuntimeException unexpected(String operation, List<Object> result) {
        return CommonProblems.INTERNAL.exception(
                operation + " script answered unexpectedly: " + result);
    }
}
