package io.weightrelay.control.update;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.control.model.LandedDigests;
import io.weightrelay.api.control.model.ParticipantState;
import io.weightrelay.api.control.model.SentDigests;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.RedisTime;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.problem.RelayException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.springframework.data.redis.core.RedisOperations;
import org.springframework.data.redis.core.SessionCallback;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads update sessions as the REST contract shows them: the session hash and its participants'
 * hash, read in one round trip (after a touch, when asked, so a timeout that passed shows), the
 * model's index of recent sessions for the console, and the digests the senders reported into one
 * instance's buffers. Nothing here moves a session but the touch ({@link SessionSteps#touch}).
 */
@Service
public class SessionReads {

    private static final int INDEXED_SESSIONS = 1000;

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final JsonMapper json;
    private final RedisTime time;
    private final UpdateProperties properties;
    private final SessionSteps steps;

    SessionReads(
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            JsonMapper json,
            RedisTime time,
            UpdateProperties properties,
            SessionSteps steps) {
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.json = json;
        this.time = time;
        this.properties = properties;
        this.steps = steps;
    }

    /** The session after a touch, which applies a phase timeout that passed. */
    public UpdateSession get(SessionKey sessionKey) {
        return read(sessionKey, true);
    }

    /**
     * The model's newest sessions, newest first, as {@link #get} answers them without touching them
     * (a read-only view); sessions that expired are dropped from the index.
     */
    public List<UpdateSession> recent(String model, int limit) {
        String index = keys.sessions(model);
        Set<String> members =
                guard.call(() -> redis.opsForZSet().reverseRange(index, 0, limit - 1));
        List<UpdateSession> out = new ArrayList<>();
        if (members == null) {
            return out;
        }
        for (String member : members) {
            int colon = member.indexOf(':');
            long generation = Long.parseLong(member.substring(0, colon));
            String group = member.substring(colon + 1);
            try {
                out.add(read(new SessionKey(new GenerationId(model, generation), group), false));
            } catch (RelayException e) {
                if (e.kind() != UpdateProblems.SESSION_NOT_FOUND) {
                    throw e;
                }
                guard.run(() -> redis.opsForZSet().remove(index, member));
            }
        }
        return out;
    }

    /**
     * What the participants' SENT reports say they wrote into {@code instance}'s buffers, one entry
     * per sender (complete once the sent barrier opened).
     */
    public LandedDigests landed(SessionKey sessionKey, String instance) {
        String prefix = instance + ">";
        Map<Object, Object> fields =
                guard.call(() -> redis.opsForHash().entries(keys.sessionSent(sessionKey)));
        List<SentDigests> senders = new ArrayList<>();
        new TreeMap<>(fields)
                .forEach(
                        (field, digests) -> {
                            String f = (String) field;
                            if (f.startsWith(prefix)) {
                                senders.add(
                                        new SentDigests(
                                                f.substring(prefix.length()),
                                                Base64.getDecoder().decode((String) digests)));
                            }
                        });
        if (senders.isEmpty()) {
            // a session that does not exist is 404, not an empty answer
            read(sessionKey, false);
        }
        return new LandedDigests(instance, senders);
    }

    UpdateSession read(SessionKey sessionKey, boolean touch) {
        return read(sessionKey, touch, false);
    }

    /**
     * The session, after a touch when {@code touch}; listed in the model's index first, in the same
     * round trip as the read, when {@code index} (every loader of the group starts or joins the
     * session at its prepare).
     */
    UpdateSession read(SessionKey sessionKey, boolean touch, boolean index) {
        if (touch) {
            steps.touch(sessionKey);
        }
        String sessionHash = keys.session(sessionKey);
        String participantsKey = keys.participants(sessionKey);
        Instant indexed = index ? time.now() : null;
        // Both hashes in one round trip, with the index's update when asked.
        List<Object> replies =
                guard.call(
                        () ->
                                redis.executePipelined(
                                        new SessionCallback<Object>() {
                                            @Override
                                            @SuppressWarnings("unchecked")
                                            public <K, V> Object execute(
                                                    RedisOperations<K, V> operations) {
                                                if (index) {
                                                    index(operations, sessionKey, indexed);
                                                }
                                                operations.opsForHash().entries((K) sessionHash);
                                                operations
                                                        .opsForHash()
                                                        .entries((K) participantsKey);
                                                return null;
                                            }
                                        }));
        Map<Object, Object> h = hash(replies.get(replies.size() - 2));
        Map<Object, Object> participants = hash(replies.get(replies.size() - 1));
        if (h.isEmpty()) {
            throw notFound(sessionKey);
        }
        return session(sessionKey, h, participants);
    }

    /**
     * Queues the listing of the session in the model's index for operators, in the pipeline that
     * reads the session after a start. Not part of the start script (whose keys are laid out by
     * participant): a start that died between the two is only missing from the console until the
     * session is touched by its next start. Scored by the Redis server's time {@code now}, so that
     * starts through different instances list in the order they happened.
     */
    @SuppressWarnings("unchecked")
    private <K, V> void index(
            RedisOperations<K, V> operations, SessionKey sessionKey, Instant now) {
        K key = (K) keys.sessions(sessionKey.model());
        V member = (V) (sessionKey.generation() + ":" + sessionKey.group());
        operations.opsForZSet().add(key, member, now.toEpochMilli());
        operations.opsForZSet().removeRange(key, 0, -(INDEXED_SESSIONS + 1));
        operations.expire(key, properties.sessionTtl().toSeconds(), TimeUnit.SECONDS);
    }

    /** The session as the session hash {@code h} and the participants' hash hold it. */
    private UpdateSession session(
            SessionKey sessionKey, Map<Object, Object> h, Map<Object, Object> participants) {
        List<ParticipantState> states = new ArrayList<>();
        new TreeMap<>(participants)
                .forEach((instance, raw) -> states.add(participant((String) instance, raw)));
        UpdateSession session =
                new UpdateSession(
                        sessionKey.model(),
                        sessionKey.generation(),
                        sessionKey.group(),
                        SessionState.fromValue((String) h.get("state")),
                        states);
        String planId = (String) h.get("planId");
        session.setPlanId(planId == null || planId.isEmpty() ? null : planId);
        session.setFailedInstance((String) h.get("failedInstance"));
        session.setFailure((String) h.get("failure"));
        session.setStartedAt(millis(h.get("startedAt")));
        // a session stored before attempts were counted is its group's first
        Object attempt = h.get("attempt");
        session.setAttempt(attempt == null ? 1 : Integer.parseInt((String) attempt));
        SessionState state = session.getState();
        boolean ended =
                state == SessionState.DONE
                        || state == SessionState.RESUMED_OLD
                        || state == SessionState.PAUSED_REBUILD;
        if (!ended) {
            session.setPhaseDeadline(millis(h.get("phaseDeadline")));
        }
        PhaseDurations durations = new PhaseDurations();
        durations.setPrepareMs(longOrNull(h.get("prepareMs")));
        durations.setApplyMs(longOrNull(h.get("applyMs")));
        durations.setPostApplyMs(longOrNull(h.get("postApplyMs")));
        durations.setVerifyMs(longOrNull(h.get("verifyMs")));
        durations.setFetchMs(longOrNull(h.get("fetchMs")));
        durations.setInstallMs(longOrNull(h.get("installMs")));
        durations.setPauseMs(longOrNull(h.get("pauseMs")));
        session.setDurations(durations);
        session.setVerifiedObjects(longOrNull(h.get("verifiedObjects")));
        session.setPartialObjects(longOrNull(h.get("partialObjects")));
        return session;
    }

    /** One participant as its JSON entry in the participants' hash holds it. */
    private ParticipantState participant(String instance, Object raw) {
        JsonNode p = json.readTree((String) raw);
        ParticipantState s =
                new ParticipantState(instance, UpdatePhase.fromValue(p.get("phase").asString()));
        if (p.has("bytesRead")) {
            s.setBytesRead(Long.parseLong(p.get("bytesRead").asString()));
        }
        if (p.has("bytesPushed")) {
            s.setBytesPushed(Long.parseLong(p.get("bytesPushed").asString()));
        }
        if (p.has("bytesReceived")) {
            s.setBytesReceived(Long.parseLong(p.get("bytesReceived").asString()));
        }
        if (p.has("sent")) {
            s.setSent(p.get("sent").asBoolean());
        }
        if (p.has("servesThroughFetch")) {
            s.setServesThroughFetch(p.get("servesThroughFetch").asBoolean());
        }
        if (p.has("error") && !p.get("error").asString().isEmpty()) {
            s.setError(p.get("error").asString());
        }
        if (p.has("failingPeer") && !p.get("failingPeer").asString().isEmpty()) {
            s.setFailingPeer(p.get("failingPeer").asString());
        }
        return s;
    }

    @SuppressWarnings("unchecked")
    private static Map<Object, Object> hash(Object reply) {
        return reply == null ? Map.of() : (Map<Object, Object>) reply;
    }

    private static OffsetDateTime millis(Object value) {
        return value == null
                ? null
                : Instant.ofEpochMilli(Long.parseLong((String) value)).atOffset(ZoneOffset.UTC);
    }

    private static Long longOrNull(Object value) {
        return value == null ? null : Long.parseLong((String) value);
    }

    static RuntimeException notFound(SessionKey sessionKey) {
        return UpdateProblems.SESSION_NOT_FOUND
                .exception(
                        "no update session of group "
                                + sessionKey.group()
                                + " to generation "
                                + sessionKey.generation()
                                + " of model "
                                + sessionKey.model())
                .with("group", sessionKey.group());
    }
}
