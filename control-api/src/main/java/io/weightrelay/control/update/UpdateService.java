package io.weightrelay.control.update;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.control.model.BarrierName;
import io.weightrelay.api.control.model.BarrierStatus;
import io.weightrelay.api.control.model.LandedDigests;
import io.weightrelay.api.control.model.Lease;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.ParticipantState;
import io.weightrelay.api.control.model.PhaseDurations;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.ReceiveBuffer;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SentDigests;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdatePhase;
import io.weightrelay.api.control.model.UpdatePreparation;
import io.weightrelay.api.control.model.UpdatePreparationRequest;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.api.control.model.WorkerPlacement;
import io.weightrelay.control.generation.GenerationProblems;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.Leases;
import io.weightrelay.control.generation.StoredGeneration;
import io.weightrelay.control.plan.PlanProblems;
import io.weightrelay.control.plan.PlanService;
import io.weightrelay.control.redis.RedisEvents;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.RedisTime;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.control.registry.ControlPlaneTicks;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.control.registry.RegistryProperties;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import io.weightrelay.service.security.Caller;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.springframework.data.redis.core.RedisOperations;
import org.springframework.data.redis.core.SessionCallback;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Update sessions in Redis: one hash per session plus one hash of participants. */
@Service
public class UpdateService {

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final ScriptCall scripts;
    private final RedisEvents events;
    private final JsonMapper json;
    private final GenerationQueries generations;
    private final PlanService plans;
    private final Leases leases;
    private final Registry registry;
    private final UpdateProperties properties;
    private final MeterRegistry meters;
    private final UpdateVerifier verifier;
    private final Clock clock;
    private final RedisTime time;
    private final ControlPlaneTicks ticks;
    private final RegistryProperties registryProperties;

    UpdateService(
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            ScriptCall scripts,
            RedisEvents events,
            JsonMapper json,
            GenerationQueries generations,
            PlanService plans,
            Leases leases,
            Registry registry,
            UpdateProperties properties,
            MeterRegistry meters,
            UpdateVerifier verifier,
            Clock clock,
            RedisTime time,
            ControlPlaneTicks ticks,
            RegistryProperties registryProperties) {
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.scripts = scripts;
        this.events = events;
        this.json = json;
        this.generations = generations;
        this.plans = plans;
        this.leases = leases;
        this.registry = registry;
        this.properties = properties;
        this.meters = meters;
        this.verifier = verifier;
        this.clock = clock;
        this.time = time;
        this.ticks = ticks;
        this.registryProperties = registryProperties;
    }

    private static final org.slf4j.Logger log =
            org.slf4j.LoggerFactory.getLogger(UpdateService.class);
    private static final int INDEXED_SESSIONS = 1000;

    public UpdateSession start(
            String model, long generation, String group, UpdateSessionRequest request) {
        committed(model, generation);
        TreeSet<String> instances = new TreeSet<>(request.getInstances());
        if (instances.size() != request.getInstances().size()) {
            throw CommonProblems.INVALID_REQUEST.exception("instances must be distinct");
        }
        if (request.getPlanId() == null) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "planId is required: a session starts only on the group's validated plan");
        }
        // Refuse before the session exists: no loader may prepare against a plan that is
        // gone or failed validation (a placement the manifest refuses never gets a plan).
        PlanSummary plan = plans.summary(request.getPlanId());
        requireValid(plan);
        requireGroupMembers(model, group, instances, plan);
        return open(
                model,
                generation,
                group,
                instances,
                request.getPlanId(),
                timeout(request.getPhaseTimeoutSeconds()),
                true);
    }

    /**
     * Refuses a session of instances that are not the group's: a loader token bound to an instance
     * starts only its own group's session, with itself in it (403 {@code identity-mismatch}), and
     * every instance must be a live loader of the model's group with a part in the plan (409 {@code
     * not-a-participant} naming the others), so nobody holds a group's session with invented or
     * borrowed instances.
     */
    private void requireGroupMembers(
            String model, String group, Set<String> instances, PlanSummary plan) {
        Set<String> members = new TreeSet<>();
        for (Loader loader : registry.liveLoaders(model, group)) {
            members.add(loader.getInstance());
        }
        Caller caller = Caller.current().orElse(null);
        if (caller != null && caller.identity() != null) {
            String me = caller.identity();
            if (!members.contains(me) || !instances.contains(me)) {
                throw CommonProblems.IDENTITY_MISMATCH
                        .exception(
                                "the "
                                        + caller.role().configName()
                                        + " token is bound to instance '"
                                        + me
                                        + "', which "
                                        + (members.contains(me)
                                                ? "is not among the instances of this session"
                                                : "is not a live loader of group '"
                                                        + group
                                                        + "' of model "
                                                        + model)
                                        + ": it may start only its own group's session")
                        .with("role", caller.role().configName())
                        .with("boundTo", me)
                        .with("requested", group);
            }
        }
        List<String> strangers = new ArrayList<>();
        Set<String> planned = new TreeSet<>(plan.getInstances());
        for (String instance : instances) {
            if (!members.contains(instance) || !planned.contains(instance)) {
                strangers.add(instance);
            }
        }
        if (!strangers.isEmpty()) {
            throw UpdateProblems.NOT_A_PARTICIPANT
                    .exception(
                            "the session of group "
                                    + group
                                    + " may hold only live loaders of the group with a part in"
                                    + " plan "
                                    + plan.getPlanId()
                                    + "; not: "
                                    + String.join(", ", strangers))
                    .with("instances", strangers)
                    .with("planId", plan.getPlanId());
        }
    }

    /** A session's phase timeout, 120 s unless the request says. */
    private static int timeout(Integer phaseTimeoutSeconds) {
        return phaseTimeoutSeconds == null ? 120 : phaseTimeoutSeconds;
    }

    private static void requireValid(PlanSummary plan) {
        if (!Boolean.TRUE.equals(plan.getValid())) {
            throw PlanProblems.PLAN_INVALID
                    .exception("plan " + plan.getPlanId() + " failed its validation")
                    .with("planId", plan.getPlanId());
        }
    }

    /**
     * One loader's prepare in one call: the committed generation, the group's plan, the session
     * (started or joined with the plan's instances) and, last, the loader's lease on the
     * generation, so a refusal anywhere leaves no lease. The loaders go back only when their
     * buffers differ from those the loader already holds.
     */
    public UpdatePreparation prepare(
            String model, long generation, String group, UpdatePreparationRequest request) {
        String instance = request.getInstance();
        leases.requireTtl(request.getLeaseTtlSeconds());
        StoredGeneration g = committed(model, generation);
        PlanService.Resolution resolved = plans.resolve(model, g, group);
        PlanSummary plan = resolved.summary();
        requireValid(plan);
        if (!plan.getInstances().contains(instance)) {
            throw UpdateProblems.NOT_A_PARTICIPANT
                    .exception(
                            "plan "
                                    + plan.getPlanId()
                                    + " of group "
                                    + group
                                    + " has no part for loader "
                                    + instance
                                    + " (it is not among the group's live loaders)")
                    .with("instance", instance)
                    .with("planId", plan.getPlanId());
        }
        UpdateSession session =
                open(
                        model,
                        generation,
                        group,
                        new TreeSet<>(plan.getInstances()),
                        plan.getPlanId(),
                        timeout(request.getPhaseTimeoutSeconds()),
                        // The loader's own reports apply the session's timeouts: the answer's
                        // session is read as it stands, not touched.
                        false);
        Lease lease = leases.lease(model, generation, instance, request.getLeaseTtlSeconds());
        String digest = buffersDigest(resolved.loaders());
        UpdatePreparation out = new UpdatePreparation(g.view(), plan, session, lease, digest);
        if (!digest.equals(request.getKnownBuffersDigest())) {
            out.setLoaders(resolved.loaders());
        }
        return out;
    }

    /**
     * What a loader's buffer directory is built from: every live loader's workers with their buffer
     * ids, segments and sizes, in the order the registry lists them.
     */
    static String buffersDigest(List<Loader> loaders) {
        ByteSink out = ByteSink.sha256();
        out.string("wr.group-buffers.v1").varInt(loaders.size());
        for (Loader l : loaders) {
            out.string(l.getInstance()).varInt(l.getWorkers().size());
            for (WorkerPlacement w : l.getWorkers()) {
                out.string(w.getWorkerId()).varInt(w.getBuffers().size());
                for (ReceiveBuffer b : w.getBuffers()) {
                    out.string(b.getBufferId()).string(b.getSegment()).varLong(b.getSize());
                }
            }
        }
        return out.digestHex();
    }

    private StoredGeneration committed(String model, long generation) {
        StoredGeneration g = generations.load(model, generation).requireNotLost();
        if (!g.committed()) {
            throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                    "generation "
                            + generation
                            + " is "
                            + g.state()
                            + "; loaders update only to"
                            + " committed generations");
        }
        return g;
    }

    /**
     * Starts or joins the session with these instances (distinct, sorted) and plan; answers it
     * after a touch (which applies a phase timeout that passed) when {@code touch}.
     */
    private UpdateSession open(
            String model,
            long generation,
            String group,
            TreeSet<String> instances,
            String planId,
            int timeoutSeconds,
            boolean touch) {
        List<String> args = new ArrayList<>();
        args.add(String.valueOf(timeoutSeconds * 1000L));
        args.add(planId == null ? "" : planId);
        args.add(String.valueOf(properties.sessionTtl().toSeconds()));
        args.addAll(instances);
        List<String> startKeys = new ArrayList<>();
        startKeys.add(keys.session(model, generation, group));
        startKeys.add(keys.participants(model, generation, group));
        startKeys.add(keys.sessionChannel(model, generation, group));
        startKeys.add(keys.sessionChecksums(model, generation, group));
        // the KEYS index of each instance's loader hash is its ARGV index
        for (String instance : instances) {
            startKeys.add(keys.loader(instance));
        }
        Reply result = scripts.run("update-start", startKeys, args);
        String code = result.code();
        if ("incomplete".equals(code)) {
            throw incomplete(group, result);
        }
        boolean fresh =
                "created".equals(code) || "restarted".equals(code) || "replaced".equals(code);
        if (fresh) {
            // what an earlier session of this generation had sent is no proof for this one
            guard.run(() -> redis.delete(keys.sessionSent(model, generation, group)));
        }
        if (fresh && properties.verifyChecksums()) {
            verifier.preload(model, generation, group, planId);
        }
        if ("restarted".equals(code)) {
            log.info(
                    "update {}/{}/{}: the failed session is started afresh for the rebuilt group",
                    model,
                    generation,
                    group);
        }
        if ("replaced".equals(code)) {
            log.info(
                    "update {}/{}/{}: the ended session of {} is replaced by one of {}",
                    model,
                    generation,
                    group,
                    result.items(1),
                    instances);
        }
        if ("conflict".equals(code)) {
            throw UpdateProblems.SESSION_CONFLICT
                    .exception(
                            "the session of group "
                                    + group
                                    + " already exists with participants "
                                    + result.items(1))
                    .with("participants", result.items(1));
        }
        return get(model, generation, group, touch, true);
    }

    /** The refusal of a session holding part of a rollout instance, from the start script. */
    private static RelayException incomplete(String group, Reply result) {
        String instance = result.item(1);
        int nodes = (int) result.number(2);
        String reason = result.item(3);
        List<String> loaders = result.items(4);
        String why =
                switch (reason) {
                    case "missing" -> "only " + loaders.size() + " of its loaders are in it";
                    case "extra" -> loaders.size() + " loaders claim it";
                    case "same-node" -> "two of its loaders serve one node";
                    default -> "its loaders disagree on how many nodes it spans";
                };
        return UpdateProblems.ROLLOUT_INSTANCE_INCOMPLETE
                .exception(
                        "the session of group "
                                + group
                                + " would hold rollout instance "
                                + instance
                                + ", which spans "
                                + nodes
                                + " nodes with one loader each, but "
                                + why
                                + ": "
                                + String.join(", ", loaders))
                .with("rolloutInstance", instance)
                .with("nodes", nodes)
                .with("reason", reason)
                .with("loaders", loaders);
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
            RedisOperations<K, V> operations,
            String model,
            long generation,
            String group,
            Instant now) {
        K key = (K) keys.sessions(model);
        operations.opsForZSet().add(key, (V) (generation + ":" + group), now.toEpochMilli());
        operations.opsForZSet().removeRange(key, 0, -(INDEXED_SESSIONS + 1));
        operations.expire(key, properties.sessionTtl().toSeconds(), TimeUnit.SECONDS);
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
                out.add(get(model, generation, group, false));
            } catch (RelayException e) {
                if (e.kind() != UpdateProblems.SESSION_NOT_FOUND) {
                    throw e;
                }
                guard.run(() -> redis.opsForZSet().remove(index, member));
            }
        }
        return out;
    }

    public UpdateSession report(String model, long generation, String group, PhaseReport report) {
        String checksums = "";
        if (report.getChecksums() != null && report.getChecksums().length > 0) {
            try {
                RangeChecksums.decode(report.getChecksums());
            } catch (CodecException e) {
                throw CommonProblems.INVALID_REQUEST
                        .exception(
                                "the range checksums of "
                                        + report.getInstance()
                                        + " cannot be read: "
                                        + e.getMessage())
                        .with("instance", report.getInstance());
            }
            checksums = Base64.getEncoder().encodeToString(report.getChecksums());
        }
        List<String> sent = new ArrayList<>();
        if (report.getPhase() == ReportedPhase.SENT && report.getSent() != null) {
            for (SentDigests to : report.getSent()) {
                sent.add(to.getInstance());
                sent.add(Base64.getEncoder().encodeToString(to.getDigests()));
            }
        }
        Reply result =
                step(
                        model,
                        generation,
                        group,
                        sent,
                        report.getInstance(),
                        report.getEpoch() == null ? "" : String.valueOf(report.getEpoch()),
                        report.getPhase().getValue(),
                        count(report.getBytesRead()),
                        count(report.getBytesPushed()),
                        count(report.getBytesReceived()),
                        report.getFailingPeer() == null ? "" : report.getFailingPeer(),
                        report.getError() == null ? "" : report.getError(),
                        checksums);
        switch (result.code()) {
            case "ok" -> {
                if (verificationClaimed(result)) {
                    record(model, verifier.verify(model, generation, group));
                }
                return get(model, generation, group, false);
            }
            case "no-epoch" ->
                    throw UpdateProblems.EPOCH_REQUIRED
                            .exception(
                                    "the report of loader "
                                            + report.getInstance()
                                            + " carries no epoch; every report carries the epoch"
                                            + " its registration returned")
                            .with("instance", report.getInstance());
            case "not-participant" ->
                    throw UpdateProblems.NOT_A_PARTICIPANT
                            .exception(
                                    "loader "
                                            + report.getInstance()
                                            + " is not a participant of this session")
                            .with("instance", report.getInstance());
            case "fenced" -> throw fenced(report, result);
            case "closed" ->
                    throw UpdateProblems.SESSION_CLOSED
                            .exception("the session already ended in state " + result.item(1))
                            .with("state", result.item(1));
            case "out-of-order" ->
                    throw UpdateProblems.PHASE_OUT_OF_ORDER
                            .exception(
                                    report.getPhase().getValue()
                                            + " cannot be reported while the session is "
                                            + result.item(1)
                                            + " and the loader is "
                                            + result.item(2))
                            .with("state", result.item(1));
            case "not-found" -> throw notFound(model, generation, group);
            default -> throw result.unexpected();
        }
    }

    public UpdateSession get(String model, long generation, String group) {
        return get(model, generation, group, true);
    }

    /**
     * What the participants' SENT reports say they wrote into {@code instance}'s buffers, one entry
     * per sender (complete once the sent barrier opened).
     */
    public LandedDigests landed(String model, long generation, String group, String instance) {
        String prefix = instance + ">";
        Map<Object, Object> fields =
                guard.call(
                        () ->
                                redis.opsForHash()
                                        .entries(keys.sessionSent(model, generation, group)));
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
            get(model, generation, group, false);
        }
        return new LandedDigests(instance, senders);
    }

    private static RuntimeException fenced(PhaseReport report, Reply result) {
        String reason = result.item(1);
        String other = result.item(2);
        String loader = "loader " + report.getInstance();
        String detail =
                switch (reason) {
                    case "stale" ->
                            "is an earlier registration of "
                                    + loader
                                    + ", which is registered with epoch "
                                    + other
                                    + " now";
                    case "foreign" ->
                            "was never issued to "
                                    + loader
                                    + " (registered with epoch "
                                    + other
                                    + "): a report for another loader, or a made-up epoch";
                    case "unregistered" -> "names " + loader + ", which is not registered";
                    case "restarted" ->
                            "is not the one "
                                    + loader
                                    + " joined this session with (epoch "
                                    + other
                                    + "); the session fails, the earlier life's part is lost";
                    default -> "is refused (" + reason + ")";
                };
        RelayException problem =
                UpdateProblems.EPOCH_FENCED
                        .exception("report epoch " + report.getEpoch() + " " + detail)
                        .with("epoch", report.getEpoch())
                        .with("reason", reason)
                        .with("instance", report.getInstance());
        if (!other.isEmpty()) {
            problem.with(
                    "restarted".equals(reason) ? "joinedEpoch" : "registeredEpoch",
                    Long.parseLong(other));
        }
        return problem;
    }

    private static boolean verificationClaimed(Reply result) {
        return result.items(1).stream().anyMatch(t -> t.startsWith("verify:"));
    }

    public BarrierStatus awaitBarrier(
            String model, long generation, String group, BarrierName barrier, Duration wait) {
        Instant deadline = clock.instant().plus(wait);
        try (RedisEvents.Waiter waiter =
                events.waiter(keys.sessionChannel(model, generation, group))) {
            return await(model, generation, group, barrier, deadline, waiter, null);
        }
    }

    /**
     * {@link #report} of the phase {@code barrier} waits for, then {@link #awaitBarrier}, starting
     * from the session the report answered: the loader that arrives last learns that the barrier
     * opened in the call that opened it.
     */
    public BarrierStatus arrive(
            String model,
            long generation,
            String group,
            BarrierName barrier,
            PhaseReport report,
            Duration wait) {
        ReportedPhase expected =
                switch (barrier) {
                    case PREPARED -> ReportedPhase.PREPARED;
                    case SENT -> ReportedPhase.SENT;
                    case APPLIED -> ReportedPhase.APPLIED;
                    case POST_APPLIED -> ReportedPhase.POST_APPLIED;
                };
        if (report.getPhase() != expected) {
            throw CommonProblems.INVALID_REQUEST
                    .exception(
                            "barrier "
                                    + barrier.getValue()
                                    + " is arrived at with a "
                                    + expected.getValue()
                                    + " report, not "
                                    + report.getPhase().getValue())
                    .with("instance", report.getInstance());
        }
        Instant deadline = clock.instant().plus(wait);
        // Listening before the report, so the event of the last arrival is never missed.
        try (RedisEvents.Waiter waiter =
                events.waiter(keys.sessionChannel(model, generation, group))) {
            UpdateSession reported = report(model, generation, group, report);
            return await(model, generation, group, barrier, deadline, waiter, reported);
        }
    }

    /** Waits for {@code barrier}, judging {@code first} (when not null) before reading again. */
    private BarrierStatus await(
            String model,
            long generation,
            String group,
            BarrierName barrier,
            Instant deadline,
            RedisEvents.Waiter waiter,
            UpdateSession first) {
        UpdateSession known = first;
        // A wake by an event reads the session as the report that published it left it; a wake by
        // the clock touches it first, so a phase timeout that passed, a verifier that died or a
        // participant no longer registered is applied. The clock wakes a waiter at least every
        // livenessEvery for the last. Every participant waits at each barrier: the untouched read
        // saves a script run per waiter when the barrier opens.
        boolean touch = true;
        while (true) {
            UpdateSession session = known != null ? known : get(model, generation, group, touch);
            known = null;
            BarrierStatus status = status(session, barrier);
            Instant now = clock.instant();
            if (status.getOpen() || status.getFailed() || !now.isBefore(deadline)) {
                return status;
            }
            Instant wake = deadline;
            Instant liveness = now.plus(properties.livenessEvery());
            if (liveness.isBefore(wake)) {
                wake = liveness;
            }
            if (session.getPhaseDeadline() != null) {
                // The phase deadline is on the Redis server's clock: how long until it passes is
                // measured on that clock, then waited for on this process's.
                Duration toPhaseEnd =
                        Duration.between(
                                time.now(), session.getPhaseDeadline().toInstant().plusMillis(5));
                Instant phaseEnd = now.plus(toPhaseEnd);
                if (phaseEnd.isBefore(wake)) {
                    wake = phaseEnd;
                }
            }
            touch = !waiter.await(Duration.between(now, wake));
        }
    }

    /** The most instances a barrier's status names as not arrived yet. */
    static final int WAITING_NAMED = 16;

    static BarrierStatus status(UpdateSession session, BarrierName barrier) {
        int need =
                switch (barrier) {
                    case PREPARED -> 2;
                    case SENT -> 5;
                    case APPLIED -> 6;
                    case POST_APPLIED -> 8;
                };
        int arrived = 0;
        int all = session.getParticipants().size();
        List<String> waiting = new ArrayList<>();
        for (ParticipantState p : session.getParticipants()) {
            boolean reached =
                    barrier == BarrierName.SENT
                            ? Boolean.TRUE.equals(p.getSent())
                            : level(p.getPhase()) >= need;
            if (reached) {
                arrived++;
            } else if (waiting.size() < WAITING_NAMED) {
                waiting.add(p.getInstance());
            }
        }
        SessionState state = session.getState();
        boolean failed = state == SessionState.RESUMED_OLD || state == SessionState.PAUSED_REBUILD;
        boolean open =
                !failed
                        && switch (barrier) {
                            case PREPARED ->
                                    state == SessionState.APPLYING
                                            || state == SessionState.POST_APPLYING
                                            || state == SessionState.DONE;
                            case SENT ->
                                    (state == SessionState.APPLYING && arrived == all)
                                            || state == SessionState.POST_APPLYING
                                            || state == SessionState.DONE;
                            case APPLIED ->
                                    state == SessionState.POST_APPLYING
                                            || state == SessionState.DONE;
                            case POST_APPLIED -> state == SessionState.DONE;
                        };
        BarrierStatus status =
                new BarrierStatus(barrier, open, failed, arrived, session.getParticipants().size());
        status.setState(state);
        status.setFailedInstance(session.getFailedInstance());
        status.setFailure(session.getFailure());
        status.setWaiting(waiting);
        return status;
    }

    /** A participant's progress, twice update-step.lua's level (SENT sits between two). */
    private static int level(UpdatePhase phase) {
        return switch (phase) {
            case PREPARED -> 2;
            case APPLYING -> 4;
            case SENT -> 5;
            case APPLIED -> 6;
            case DONE -> 8;
            default -> 0;
        };
    }

    private UpdateSession get(String model, long generation, String group, boolean touch) {
        return get(model, generation, group, touch, false);
    }

    /**
     * The session, after a touch when {@code touch}; listed in the model's index first, in the same
     * round trip as the read, when {@code index} (every loader of the group starts or joins the
     * session at its prepare).
     */
    private UpdateSession get(
            String model, long generation, String group, boolean touch, boolean index) {
        if (touch) {
            Reply result =
                    step(model, generation, group, List.of(), "", "", "", "", "", "", "", "", "");
            if (result.is("not-found")) {
                throw notFound(model, generation, group);
            }
            record(model, result);
            if (result.is("ok") && verificationClaimed(result)) {
                // The verifier that claimed this session died; this touch takes it over.
                record(model, verifier.verify(model, generation, group));
            }
        }
        String sessionKey = keys.session(model, generation, group);
        String participantsKey = keys.participants(model, generation, group);
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
                                                    index(
                                                            operations,
                                                            model,
                                                            generation,
                                                            group,
                                                            indexed);
                                                }
                                                operations.opsForHash().entries((K) sessionKey);
                                                operations
                                                        .opsForHash()
                                                        .entries((K) participantsKey);
                                                return null;
                                            }
                                        }));
        Map<Object, Object> h = hash(replies.get(replies.size() - 2));
        Map<Object, Object> participants = hash(replies.get(replies.size() - 1));
        if (h.isEmpty()) {
            throw notFound(model, generation, group);
        }
        List<ParticipantState> states = new ArrayList<>();
        new TreeMap<>(participants)
                .forEach(
                        (instance, raw) -> {
                            JsonNode p = json.readTree((String) raw);
                            ParticipantState s =
                                    new ParticipantState(
                                            (String) instance,
                                            UpdatePhase.fromValue(p.get("phase").asString()));
                            if (p.has("bytesRead")) {
                                s.setBytesRead(Long.parseLong(p.get("bytesRead").asString()));
                            }
                            if (p.has("bytesPushed")) {
                                s.setBytesPushed(Long.parseLong(p.get("bytesPushed").asString()));
                            }
                            if (p.has("bytesReceived")) {
                                s.setBytesReceived(
                                        Long.parseLong(p.get("bytesReceived").asString()));
                            }
                            if (p.has("sent")) {
                                s.setSent(p.get("sent").asBoolean());
                            }
                            if (p.has("error") && !p.get("error").asString().isEmpty()) {
                                s.setError(p.get("error").asString());
                            }
                            if (p.has("failingPeer")
                                    && !p.get("failingPeer").asString().isEmpty()) {
                                s.setFailingPeer(p.get("failingPeer").asString());
                            }
                            states.add(s);
                        });
        UpdateSession session =
                new UpdateSession(
                        model,
                        generation,
                        group,
                        SessionState.fromValue((String) h.get("state")),
                        states);
        String planId = (String) h.get("planId");
        session.setPlanId(planId == null || planId.isEmpty() ? null : planId);
        session.setFailedInstance((String) h.get("failedInstance"));
        session.setFailure((String) h.get("failure"));
        session.setStartedAt(millis(h.get("startedAt")));
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
        session.setDurations(durations);
        session.setVerifiedObjects(longOrNull(h.get("verifiedObjects")));
        session.setPartialObjects(longOrNull(h.get("partialObjects")));
        return session;
    }

    @SuppressWarnings("unchecked")
    private static Map<Object, Object> hash(Object reply) {
        return reply == null ? Map.of() : (Map<Object, Object>) reply;
    }

    /** update-step.lua with {@code args}, then {@code sent}'s (destination, digests) pairs. */
    private Reply step(
            String model, long generation, String group, List<String> sent, String... args) {
        List<String> argv = new ArrayList<>(args.length + 5 + sent.size());
        argv.addAll(List.of(args));
        argv.add(properties.verifyChecksums() ? "1" : "");
        argv.add(String.valueOf(generation));
        argv.add(keys.prefix());
        argv.add(String.valueOf(registryProperties.loaderTtl().toMillis()));
        argv.add(ticks.gapMillis());
        argv.addAll(sent);
        String instance = args[0];
        List<String> stepKeys =
                new ArrayList<>(
                        List.of(
                                keys.session(model, generation, group),
                                keys.participants(model, generation, group),
                                keys.loader(instance.isEmpty() ? "-" : instance),
                                keys.sessionChannel(model, generation, group),
                                keys.sessionChecksums(model, generation, group),
                                keys.loaders()));
        stepKeys.addAll(ticks.keys());
        stepKeys.add(keys.sessionSent(model, generation, group));
        Reply result = scripts.run("update-step", stepKeys, argv);
        if (!instance.isEmpty()) {
            record(model, result);
        }
        return result;
    }

    /** Turns the transitions a script reports into metrics, once, on the instance that saw them. */
    private void record(String model, Reply result) {
        if (!result.is("ok")) {
            return;
        }
        for (String t : result.items(1)) {
            int colon = t.indexOf(':');
            String name = t.substring(0, colon);
            String value = t.substring(colon + 1);
            if ("verify".equals(name)) {
                continue;
            }
            if ("failed".equals(name)) {
                meters.counter("relay.updates.failed", "model", model, "state", value).increment();
            } else {
                meters.timer("relay.updates.phase", "model", model, "phase", name)
                        .record(Duration.ofMillis(Long.parseLong(value)));
            }
        }
    }

    private static String count(Long value) {
        return value == null ? "" : String.valueOf(value);
    }

    private static OffsetDateTime millis(Object value) {
        return value == null
                ? null
                : Instant.ofEpochMilli(Long.parseLong((String) value)).atOffset(ZoneOffset.UTC);
    }

    private static Long longOrNull(Object value) {
        return value == null ? null : Long.parseLong((String) value);
    }

    private static RuntimeException notFound(String model, long generation, String group) {
        return UpdateProblems.SESSION_NOT_FOUND
                .exception(
                        "no update session of group "
                                + group
                                + " to generation "
                                + generation
                                + " of model "
                                + model)
                .with("group", group);
    }
}
