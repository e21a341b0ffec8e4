package io.weightrelay.control.generation;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.OpenGenerationRequest;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.api.control.model.RegisterObjectsRequest;
import io.weightrelay.api.control.model.RegisterObjectsResponse;
import io.weightrelay.api.control.model.RegisteredObject;
import io.weightrelay.control.assignment.AssignmentService;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * The life of a generation: open (idempotent by trainer step), register its stored objects, commit
 * or abort, lose when its bytes are gone, and activate again. Every state change is one Lua script
 * (see {@code scripts/}), so instances racing on one generation see one outcome.
 */
@Service
public class GenerationLifecycle {

    private final GenerationScripts scripts;
    private final GenerationQueries generations;
    private final ManifestStore manifests;
    private final AssignmentService assignments;
    private final GenerationProperties properties;
    private final JsonMapper json;
    private final MeterRegistry meters;
    private final ApplicationEventPublisher events;

    GenerationLifecycle(
            GenerationScripts scripts,
            GenerationQueries generations,
            ManifestStore manifests,
            AssignmentService assignments,
            GenerationProperties properties,
            JsonMapper json,
            MeterRegistry meters,
            ApplicationEventPublisher events) {
        this.scripts = scripts;
        this.generations = generations;
        this.manifests = manifests;
        this.assignments = assignments;
        this.properties = properties;
        this.json = json;
        this.meters = meters;
        this.events = events;
    }

    private static final Logger log = LoggerFactory.getLogger(GenerationLifecycle.class);

    /** Result of opening: the body and whether this call created the generation. */
    public record Opened(OpenedGeneration body, boolean created) {}

    public Opened open(String model, OpenGenerationRequest request) {
        GenerationQueries.requireSameModel(model, request.getManifest().getModel());
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
        String topologyJson = StoredTopology.of(request.getTrainerTopology()).write(json);
        Reply result = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            manifests.store(model, digest, manifest, source);
            result =
                    scripts.run(
                            "open",
                            model,
                            String.valueOf(request.getTrainerStep()),
                            digest,
                            trainers.digest(),
                            String.valueOf(source.fragments().size()),
                            String.valueOf(source.totalBytes()),
                            topologyJson,
                            String.valueOf(
                                    request.getAfterGeneration() == null
                                            ? 0
                                            : request.getAfterGeneration()));
            if (!result.is("manifest-missing")) {
                break;
            }
            // Garbage collection dropped the manifest between our write and the open: write again.
        }
        GenerationId id;
        switch (result.code()) {
            case "created", "existing" -> id = new GenerationId(model, result.number(1));
            case "step-conflict" ->
                    throw GenerationProblems.TRAINER_STEP_CONFLICT
                            .exception(
                                    "trainer step "
                                            + request.getTrainerStep()
                                            + " already opened generation "
                                            + result.item(1)
                                            + " with another manifest or trainer topology")
                            .with("generation", result.number(1));
            default -> throw result.unexpected();
        }
        // The planner's first resolve needs this manifest: decoding it again from Redis costs
        // about a second at Kimi-K2 scale.
        manifests.remember(model, digest, source);
        Generation generation = generations.get(id);
        OpenedGeneration body =
                new OpenedGeneration(generation, assignments.assignment(source, digest, trainers));
        if (result.is("created")) {
            events.publishEvent(new GenerationOpened(id));
        }
        return new Opened(body, result.is("created"));
    }

    public RegisterObjectsResponse register(GenerationId id, RegisterObjectsRequest request) {
        List<RegisteredObject> objects = request.getObjects();
        if (objects.size() > properties.registerBatchMax()) {
            throw CommonProblems.PAYLOAD_TOO_LARGE.exception(
                    "at most " + properties.registerBatchMax() + " objects per batch");
        }
        String prefix = id.model() + "/" + id.generation() + "/";
        List<String> args = new ArrayList<>(2 + objects.size() * 4);
        args.add(String.valueOf(id.generation()));
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
        Reply result = scripts.run("register", id.model(), args);
        return switch (result.code()) {
            case "ok" ->
                    new RegisterObjectsResponse(
                            (int) result.number(1), result.number(2), result.number(3));
            case "not-found" -> throw GenerationQueries.notFound(id);
            case "not-open" -> throw notOpen(id, result.item(1));
            case "unknown-object" ->
                    throw GenerationProblems.UNKNOWN_OBJECT
                            .exception(
                                    "object '"
                                            + prefix
                                            + result.item(1)
                                            + "' is not a fragment of the manifest")
                            .with("key", prefix + result.item(1));
            case "size-mismatch" ->
                    throw GenerationProblems.OBJECT_SIZE_MISMATCH
                            .exception(
                                    "object '"
                                            + prefix
                                            + result.item(1)
                                            + "' has "
                                            + result.item(3)
                                            + " bytes; the manifest says "
                                            + result.item(2))
                            .with("key", prefix + result.item(1))
                            .with("expectedSize", result.number(2));
            case "object-conflict" ->
                    throw GenerationProblems.OBJECT_CONFLICT
                            .exception(
                                    "object '"
                                            + prefix
                                            + result.item(1)
                                            + "' is already registered with size "
                                            + result.item(2)
                                            + " and checksum "
                                            + result.item(3))
                            .with("key", prefix + result.item(1));
            default -> throw result.unexpected();
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
        count("relay.generations.committed", model);
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

    public Generation commit(GenerationId id) {
        String nonce = UUID.randomUUID().toString();
        Reply result = scripts.run("commit", id.model(), String.valueOf(id.generation()), nonce);
        switch (result.code()) {
            case "ok", "ok-retry" -> {
                Generation committed = generations.get(id);
                if (result.is("ok")) {
                    published(committed);
                    events.publishEvent(new GenerationCommitted(id));
                }
                log.info(
                        "model {}: generation {} committed and active (previous: {})",
                        id.model(),
                        id.generation(),
                        result.size() > 1 ? result.item(1) : "?");
                return committed;
            }
            case "not-found" -> throw GenerationQueries.notFound(id);
            case "not-open" ->
                    throw GenerationProblems.COMMIT_CONFLICT
                            .exception(
                                    "generation "
                                            + id.generation()
                                            + " is "
                                            + result.item(1)
                                            + ", not OPEN; nothing changed")
                            .with("state", result.item(1));
            case "stale" ->
                    throw GenerationProblems.COMMIT_CONFLICT
                            .exception(
                                    "newer generation "
                                            + result.item(1)
                                            + " is already active; nothing changed")
                            .with("activeGeneration", result.number(1));
            case "incomplete" -> {
                long missing = result.number(1);
                long wrong = result.number(2);
                List<String> sample = new ArrayList<>();
                for (int i = 3; i < result.size(); i++) {
                    sample.add(result.item(i));
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
            default -> throw result.unexpected();
        }
    }

    public Generation abort(GenerationId id, String reason) {
        Reply result =
                scripts.run(
                        "abort",
                        id.model(),
                        String.valueOf(id.generation()),
                        reason == null ? "" : reason);
        switch (result.code()) {
            case "ok" -> {
                if ("aborted".equals(result.item(1))) {
                    count("relay.generations.aborted", id.model());
                }
                long removed = manifests.removeObjects(id, result.item(2));
                log.info(
                        "model {}: generation {} aborted ({}), {} store object(s) removed",
                        id.model(),
                        id.generation(),
                        reason,
                        removed);
                return generations.get(id);
            }
            case "not-found" -> throw GenerationQueries.notFound(id);
            case "not-open" -> throw notOpen(id, result.item(1));
            default -> throw result.unexpected();
        }
    }

    /**
     * Marks a generation whose bytes in {@code segment} are gone (its owner re-created it after a
     * crash, or its Mooncake agent died with the segment it mounted): committed -> LOST, never
     * leased or loaded again, so loaders stay on what they serve; if it was active, the newest
     * earlier whole generation becomes active again (restarted and new engines load that); open ->
     * ABORTED with its remaining objects removed. Idempotent. Refused (409 {@code
     * segment-holds-no-objects}) when the generation registered no object in {@code segment}: an
     * owner's loss is about its own objects, never another segment's generation.
     */
    public Generation lose(GenerationId id, String segment, long objects, String why) {
        generations.load(id);
        long[] held = generations.bytesPerSegment(id).get(segment);
        if (held == null || held[1] == 0) {
            throw GenerationProblems.SEGMENT_HOLDS_NO_OBJECTS
                    .exception(
                            "generation "
                                    + id.generation()
                                    + " of model "
                                    + id.model()
                                    + " registered no object in segment '"
                                    + segment
                                    + "': a segment's owner reports the loss of its own objects"
                                    + " only")
                    .with("model", id.model())
                    .with("generation", id.generation())
                    .with("segment", segment);
        }
        String reason =
                objects
                        + " object(s) in segment '"
                        + segment
                        + "' are gone"
                        + (why == null || why.isBlank() ? " (its owner lost them)" : ": " + why);
        Reply result = scripts.run("lose", id.model(), String.valueOf(id.generation()), reason);
        switch (result.code()) {
            case "ok" -> {
                String outcome = result.item(1);
                if ("lost".equals(outcome)) {
                    count("relay.generations.lost", id.model());
                    String back = result.item(4);
                    log.warn(
                            "model {}: generation {} is LOST: {}; {}",
                            id.model(),
                            id.generation(),
                            reason,
                            back.isEmpty()
                                    ? "the active generation is unchanged"
                                    : "generation " + back + " (whole) is active again");
                } else if ("aborted".equals(outcome)) {
                    count("relay.generations.aborted", id.model());
                    long removed = manifests.removeObjects(id, result.item(3));
                    log.warn(
                            "model {}: open generation {} aborted, {} store object(s) removed: {}",
                            id.model(),
                            id.generation(),
                            removed,
                            reason);
                }
                return generations.get(id);
            }
            case "not-found" -> throw GenerationQueries.notFound(id);
            default -> throw result.unexpected();
        }
    }

    /** Makes a committed generation active again (checkpoint restore). */
    public Generation activate(GenerationId id) {
        Reply result = scripts.run("activate", id.model(), String.valueOf(id.generation()));
        return switch (result.code()) {
            case "ok" -> generations.get(id);
            case "not-found" -> throw GenerationQueries.notFound(id);
            case "not-committed" ->
                    throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                            "generation " + id.generation() + " is " + result.item(1));
            default -> throw result.unexpected();
        };
    }

    /** One more of a per-model event ({@code relay.generations.*}, tagged with the model). */
    private void count(String meter, String model) {
        meters.counter(meter, "model", model).increment();
    }

    private static RelayException notOpen(GenerationId id, String state) {
        return GenerationQueries.inState(GenerationProblems.GENERATION_NOT_OPEN, id, state, "");
    }
}
