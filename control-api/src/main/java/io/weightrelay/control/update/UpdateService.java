package io.weightrelay.control.update;

import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.Lease;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdatePreparation;
import io.weightrelay.api.control.model.UpdatePreparationRequest;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.control.generation.GenerationProblems;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.Leases;
import io.weightrelay.control.generation.StoredGeneration;
import io.weightrelay.control.plan.PlanProblems;
import io.weightrelay.control.plan.PlanService;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.security.Caller;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.stereotype.Service;

/**
 * How a group's update session begins: an explicit start, or a loader's prepare, which starts or
 * joins it. Both admit only a committed generation, the group's validated plan and the group's live
 * loaders with a part in it; the prepare then takes the loader's lease. The session itself is
 * started by {@link SessionStarts}; reports, barriers and reads have classes of their own ({@link
 * PhaseReports}, {@link Barriers}, {@link SessionReads}).
 */
@Service
public class UpdateService {

    private final GenerationQueries generations;
    private final PlanService plans;
    private final Leases leases;
    private final Registry registry;
    private final SessionStarts starts;

    UpdateService(
            GenerationQueries generations,
            PlanService plans,
            Leases leases,
            Registry registry,
            SessionStarts starts) {
        this.generations = generations;
        this.plans = plans;
        this.leases = leases;
        this.registry = registry;
        this.starts = starts;
    }

    public UpdateSession start(SessionKey sessionKey, UpdateSessionRequest request) {
        committed(sessionKey.generationId());
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
        requireGroupMembers(sessionKey.model(), sessionKey.group(), instances, plan);
        return starts.open(
                sessionKey,
                instances,
                request.getPlanId(),
                timeout(request.getPhaseTimeoutSeconds()),
                true,
                null);
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
    public UpdatePreparation prepare(SessionKey sessionKey, UpdatePreparationRequest request) {
        String instance = request.getInstance();
        leases.requireTtl(request.getLeaseTtlSeconds());
        StoredGeneration g = committed(sessionKey.generationId());
        PlanService.Resolution resolved = plans.resolve(sessionKey.model(), g, sessionKey.group());
        PlanSummary plan = resolved.summary();
        requireValid(plan);
        if (!plan.getInstances().contains(instance)) {
            throw UpdateProblems.NOT_A_PARTICIPANT
                    .exception(
                            "plan "
                                    + plan.getPlanId()
                                    + " of group "
                                    + sessionKey.group()
                                    + " has no part for loader "
                                    + instance
                                    + " (it is not among the group's live loaders)")
                    .with("instance", instance)
                    .with("planId", plan.getPlanId());
        }
        UpdateSession session =
                starts.open(
                        sessionKey,
                        new TreeSet<>(plan.getInstances()),
                        plan.getPlanId(),
                        timeout(request.getPhaseTimeoutSeconds()),
                        // The loader's own reports apply the session's timeouts: the answer's
                        // session is read as it stands, not touched.
                        false,
                        // Its new run means its part in an attempt that failed is over.
                        instance);
        requireOpen(sessionKey, session, instance);
        Lease lease =
                leases.lease(sessionKey.generationId(), instance, request.getLeaseTtlSeconds());
        String digest = buffersDigest(resolved.loaders());
        UpdatePreparation out = new UpdatePreparation(g.view(), plan, session, lease, digest);
        if (!digest.equals(request.getKnownBuffersDigest())) {
            out.setLoaders(resolved.loaders());
        }
        return out;
    }

    /**
     * Refuses a prepare that joined a session which already ended PAUSED_REBUILD: the same lives
     * never start it again (update-start.lua starts it afresh only for a rebuilt group, and retries
     * only RESUMED_OLD), so one of the loader's reports would be refused as "already ended". It is
     * refused here instead, naming how the session ended, why, and what loads the generation again.
     * A session fails PAUSED_REBUILD after the applied barrier even where the failing engine kept
     * its old weights (it declined the fetched update, or never asked to install it): another
     * member may have installed by then. A DONE session is joined as before: a loader of it that
     * loads the same generation again finds every barrier open.
     */
    private static void requireOpen(SessionKey key, UpdateSession session, String instance) {
        SessionState state = session.getState();
        if (state != SessionState.PAUSED_REBUILD) {
            return;
        }
        String why =
                session.getFailure() == null
                        ? ""
                        : " ("
                                + (session.getFailedInstance() == null
                                        ? ""
                                        : session.getFailedInstance() + ": ")
                                + session.getFailure()
                                + ")";
        int attempt = session.getAttempt() == null ? 1 : session.getAttempt();
        throw UpdateProblems.SESSION_CLOSED
                .exception(
                        "the session of group "
                                + key.group()
                                + " to generation "
                                + key.generation()
                                + " ended "
                                + state.getValue()
                                + why
                                + " before this prepare of loader "
                                + instance
                                + ", and only a rebuilt group starts it again: register loader "
                                + instance
                                + " again (a new epoch) to load generation "
                                + key.generation()
                                + ", or update to a newer generation")
                .with("instance", instance)
                .with("state", state.getValue())
                .with("attempt", attempt);
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

    private StoredGeneration committed(GenerationId id) {
        StoredGeneration g = generations.load(id).requireNotLost();
        if (!g.committed()) {
            throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                    "generation "
                            + id.generation()
                            + " is "
                            + g.state()
                            + "; loaders update only to"
                            + " committed generations");
        }
        return g;
    }
}
