package io.weightrelay.control.operator;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationOverview;
import io.weightrelay.api.control.model.InstanceLoad;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderOverview;
import io.weightrelay.api.control.model.ModelOverview;
import io.weightrelay.api.control.model.NicLoad;
import io.weightrelay.api.control.model.PlanLoad;
import io.weightrelay.api.control.model.SegmentFill;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.UpdateOverview;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.server.OperatorApi;
import io.weightrelay.control.checkpoint.CheckpointRecords;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.plan.PlanProblems;
import io.weightrelay.control.plan.PlanService;
import io.weightrelay.control.redis.RedisTime;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.control.update.SessionReads;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.plan.PlanLoads;
import io.weightrelay.service.problem.RelayException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
record OperatorController(
        GenerationQueries generations,
        CheckpointRecords checkpoints,
        Registry registry,
        SessionReads sessions,
        PlanService plans,
        SegmentFills fills,
        RedisTime time)
        implements OperatorApi {

    @Override
    public ResponseEntity<List<ModelOverview>> listModelOverviews(Integer newest) {
        List<ModelOverview> out = new ArrayList<>();
        for (String model : new TreeSet<>(generations.models())) {
            List<GenerationOverview> listed = new ArrayList<>();
            for (Generation g : generations.list(model, null, null, newest)) {
                GenerationOverview overview = new GenerationOverview(g);
                overview.setCheckpoint(
                        checkpoints.status(new GenerationId(model, g.getGeneration())));
                listed.add(overview);
            }
            ModelOverview overview = new ModelOverview(model, listed);
            generations
                    .activeIfAny(model)
                    .ifPresent(a -> overview.setActiveGeneration(a.getGeneration()));
            out.add(overview);
        }
        return ResponseEntity.ok(out);
    }

    @Override
    public ResponseEntity<List<SegmentFill>> listSegmentFill() {
        Map<String, long[]> stored = fills.fill();
        List<SegmentFill> out = new ArrayList<>();
        long now = time.now().toEpochMilli();
        for (SegmentOwner s : registry.liveSegments()) {
            long[] sum = stored.getOrDefault(s.getSegment(), new long[2]);
            SegmentFill fill =
                    new SegmentFill(
                            s.getSegment(), s.getNode(), s.getSize(), s.getAlive(), sum[0], sum[1]);
            fill.setRole(s.getRole());
            fill.setLastHeartbeat(s.getLastHeartbeat());
            fill.setHeartbeatAgeMs(ageMs(s.getLastHeartbeat(), now));
            out.add(fill);
        }
        return ResponseEntity.ok(out);
    }

    @Override
    public ResponseEntity<List<LoaderOverview>> listLoaderOverviews(String after, Integer limit) {
        List<LoaderOverview> out = new ArrayList<>();
        long now = time.now().toEpochMilli();
        for (Loader l : registry.liveLoaders(null, null, after, limit)) {
            LoaderOverview o =
                    new LoaderOverview(
                            l.getInstance(),
                            l.getModel(),
                            l.getGroup(),
                            l.getNode(),
                            l.getEpoch(),
                            l.getAlive(),
                            l.getWorkers().size());
            o.setLastHeartbeat(l.getLastHeartbeat());
            o.setHeartbeatAgeMs(ageMs(l.getLastHeartbeat(), now));
            o.setGeneration(l.getGeneration());
            o.setModes(
                    new ArrayList<>(
                            new TreeSet<ConsumeMode>(
                                    l.getWorkers().stream()
                                            .map(WorkerPlacement::getMode)
                                            .toList())));
            out.add(o);
        }
        return ResponseEntity.ok(out);
    }

    @Override
    public ResponseEntity<List<UpdateOverview>> listRecentUpdates(String model, Integer limit) {
        generations.requireModel(model);
        List<UpdateOverview> out = new ArrayList<>();
        for (UpdateSession session : sessions.recent(model, limit)) {
            List<InstanceLoad> planned = new ArrayList<>();
            if (session.getPlanId() != null) {
                for (PlanLoads.Instance i : plannedLoads(session.getPlanId())) {
                    if (session.getParticipants().stream()
                            .anyMatch(p -> p.getInstance().equals(i.instance()))) {
                        planned.add(instanceLoad(i));
                    }
                }
            }
            out.add(new UpdateOverview(session, planned));
        }
        return ResponseEntity.ok(out);
    }

    @Override
    public ResponseEntity<PlanLoad> getPlanLoad(String planId) {
        plans.summary(planId);
        PlanLoads loads = plans.load(planId);
        List<NicLoad> nics = new ArrayList<>();
        for (PlanLoads.Nic n : loads.nics()) {
            nics.add(
                    new NicLoad(
                            n.node(),
                            n.nic(),
                            n.trainer() ? NicLoad.SideEnum.TRAINER : NicLoad.SideEnum.ROLLOUT,
                            n.gbps(),
                            n.readBytes(),
                            n.pushedBytes(),
                            n.receivedBytes()));
        }
        List<InstanceLoad> instances = new ArrayList<>();
        loads.instances().forEach(i -> instances.add(instanceLoad(i)));
        return ResponseEntity.ok(new PlanLoad(planId, nics, instances));
    }

    /** A session's plan may have expired before the session: then nothing is planned. */
    private List<PlanLoads.Instance> plannedLoads(String planId) {
        try {
            return plans.load(planId).instances();
        } catch (RelayException e) {
            if (e.kind() == PlanProblems.PLAN_NOT_FOUND) {
                return List.of();
            }
            throw e;
        }
    }

    private static InstanceLoad instanceLoad(PlanLoads.Instance i) {
        return new InstanceLoad(i.instance(), i.readBytes(), i.pushedBytes(), i.receivedBytes());
    }

    /**
     * How long before {@code now} (Redis server time, as heartbeats are stamped) {@code at} was.
     */
    private static Long ageMs(OffsetDateTime at, long now) {
        return at == null ? null : Math.max(0, now - at.toInstant().toEpochMilli());
    }
}
