package io.weightrelay.control.generation;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.control.redis.RedisEvents;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.RedisTime;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads of generations and models: plain Redis commands, never a script, so they answer whatever
 * the last state change left.
 */
@Service
public class GenerationQueries {

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final RedisEvents events;
    private final JsonMapper json;
    private final Clock clock;

    GenerationQueries(
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            RedisEvents events,
            JsonMapper json,
            Clock clock) {
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.events = events;
        this.json = json;
        this.clock = clock;
    }

    public Generation get(GenerationId id) {
        return load(id).view();
    }

    public StoredGeneration load(GenerationId id) {
        return find(id).orElseThrow(() -> notFound(id));
    }

    public Optional<StoredGeneration> find(GenerationId id) {
        Map<Object, Object> hash =
                guard.call(() -> redis.opsForHash().entries(keys.generation(id)));
        if (hash.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(toStored(keys.generation(id), hash));
    }

    /**
     * Newest first; with {@code trainerStep}, only the generation the step's latest open made (the
     * step index that makes opening idempotent), so a rollout finds a step's generation in one
     * lookup however many generations the model has.
     */
    public List<Generation> list(String model, GenerationState state, Long trainerStep, int limit) {
        requireModel(model);
        List<String> ids;
        if (trainerStep != null) {
            Object id =
                    guard.call(
                            () ->
                                    redis.opsForHash()
                                            .get(keys.steps(model), String.valueOf(trainerStep)));
            ids = id == null ? List.of() : List.of(id.toString());
        } else {
            ids =
                    guard.call(
                            () ->
                                    new ArrayList<>(
                                            redis.opsForZSet()
                                                    .reverseRange(keys.generations(model), 0, -1)));
        }
        List<Generation> out = new ArrayList<>();
        for (String id : ids) {
            if (out.size() >= limit) {
                break;
            }
            find(new GenerationId(model, Long.parseLong(id)))
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
        return find(new GenerationId(model, Long.parseLong(id))).map(StoredGeneration::view);
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
                waiter.await(left);
            }
        }
    }

    /**
     * Registered bytes and objects of a generation per segment its publisher named (an object named
     * in several segments counts in each): one read of its object hash.
     */
    public Map<String, long[]> bytesPerSegment(GenerationId id) {
        Map<Object, Object> objects =
                guard.call(() -> redis.opsForHash().entries(keys.objects(id)));
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

    /** Registered objects of a generation: store key to the checksum its publisher reported. */
    public Map<String, String> registeredChecksums(GenerationId id) {
        Map<Object, Object> objects =
                guard.call(() -> redis.opsForHash().entries(keys.objects(id)));
        Map<String, String> out = new HashMap<>();
        objects.forEach(
                (f, v) -> out.put(id.objectKey((String) f), ((String) v).split("\\|", -1)[1]));
        return out;
    }

    /** Every model that ever opened a generation. */
    public Set<String> models() {
        Set<String> models = guard.call(() -> redis.opsForSet().members(keys.models()));
        return models == null ? Set.of() : new HashSet<>(models);
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

    /**
     * A refusal of kind {@code kind} because generation {@code id} is in {@code state} ("generation
     * 4 of model m is committed", then {@code consequence}), carrying the state for a client to act
     * on: the one way an operation refused for a generation's state names it.
     */
    static RelayException inState(
            ProblemKind kind, GenerationId id, String state, String consequence) {
        return kind.exception(
                        "generation "
                                + id.generation()
                                + " of model "
                                + id.model()
                                + " is "
                                + state
                                + consequence)
                .with("state", state);
    }

    static RelayException notFound(GenerationId id) {
        return GenerationProblems.GENERATION_NOT_FOUND
                .exception("model " + id.model() + " has no generation " + id.generation())
                .with("model", id.model())
                .with("generation", id.generation());
    }

    private StoredGeneration toStored(String key, Map<Object, Object> h) {
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
                topology == null ? null : StoredTopology.read(json, key, topology).toApi());
    }

    private static String str(Map<Object, Object> h, String field) {
        Object v = h.get(field);
        return v == null ? null : v.toString();
    }

    /** A stamp as {@link RedisTime#stamp} reads it. */
    private static OffsetDateTime time(Map<Object, Object> h, String field) {
        return RedisTime.stamp(str(h, field));
    }
}
