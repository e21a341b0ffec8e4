package io.weightrelay.control.registry;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.InstanceSpan;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.DataplaneEngineName;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a loader's registration must satisfy before anything of it is stored: its own shape ({@link
 * #placement}), its data-plane engine ({@link #engine}) and, for a loader of an instance that spans
 * nodes, its agreement with the instance's other loaders ({@link #span}). The geometry of its
 * fragments is {@link PlacementChecks}'.
 */
final class RegistrationChecks {

    private RegistrationChecks() {}

    /**
     * Worker ids and buffer ids unique, one segment per worker, compat workers without fragments,
     * fragments inline or by digest (not both), and every fragment naming a buffer of its worker.
     */
    static void placement(String instance, LoaderRegistration r) {
        Set<String> workerIds = new HashSet<>();
        for (WorkerPlacement w : r.getWorkers()) {
            if (!workerIds.add(w.getWorkerId())) {
                throw invalidPlacement(instance, w, " is listed twice");
            }
            Set<String> buffers = new HashSet<>();
            String segment = null;
            for (ReceiveBuffer b : w.getBuffers()) {
                if (!buffers.add(b.getBufferId())) {
                    throw invalidPlacement(
                            instance, w, " registers buffer " + b.getBufferId() + " twice");
                }
                if (segment != null && !segment.equals(b.getSegment())) {
                    throw invalidPlacement(
                            instance, w, ": all receive buffers must live in one segment");
                }
                segment = b.getSegment();
            }
            List<TargetFragment> fragments =
                    w.getFragments() == null ? List.of() : w.getFragments();
            if (w.getMode() == ConsumeMode.COMPAT
                    && (!fragments.isEmpty() || w.getPlacement() != null)) {
                throw invalidPlacement(
                        instance,
                        w,
                        ": compat workers receive every tensor whole and declare no"
                                + " fragments");
            }
            if (w.getPlacement() != null && !fragments.isEmpty()) {
                throw invalidPlacement(
                        instance,
                        w,
                        ": fragments are given inline or by placement digest, not both");
            }
            for (TargetFragment f : fragments) {
                if (!buffers.contains(f.getBufferId())) {
                    throw invalidPlacement(
                                    instance,
                                    w,
                                    ": fragment of "
                                            + f.getTensor()
                                            + " names unknown buffer "
                                            + f.getBufferId())
                            .with("tensor", f.getTensor())
                            .with("bufferId", f.getBufferId());
                }
            }
        }
    }

    /**
     * A loader serving one node of a rollout instance that spans nodes: its workers are the ranks
     * of its node, and it agrees with the instance's other live loaders of its model and group on
     * the node count, serves a node none of them serves, and is not one loader too many. The group
     * is read only for such loaders (one per node of a spanning instance, so tens at Kimi-K2
     * scale). Two loaders registering at once for one node can both pass; the update session's
     * start refuses that instance then ({@code update-start.lua}).
     */
    static void span(String instance, LoaderRegistration r, List<Loader> liveOfGroup) {
        InstanceSpan span = r.getSpan();
        for (WorkerPlacement w : r.getWorkers()) {
            if (!r.getNode().equals(w.getNode())) {
                throw invalidPlacement(
                                instance,
                                w,
                                " is on node "
                                        + w.getNode()
                                        + ", but a loader of rollout instance "
                                        + span.getRolloutInstance()
                                        + " registers only the ranks of its own node "
                                        + r.getNode())
                        .with("rolloutInstance", span.getRolloutInstance());
            }
        }
        Set<String> loaders = new TreeSet<>();
        loaders.add(instance);
        for (Loader other : liveOfGroup) {
            InstanceSpan theirs = other.getSpan();
            if (other.getInstance().equals(instance)
                    || theirs == null
                    || !theirs.getRolloutInstance().equals(span.getRolloutInstance())) {
                continue;
            }
            if (!theirs.getNodes().equals(span.getNodes())) {
                throw spanConflict(
                        instance,
                        span,
                        "spans "
                                + span.getNodes()
                                + " nodes, but its loader "
                                + other.getInstance()
                                + " registered it spanning "
                                + theirs.getNodes());
            }
            if (other.getNode().equals(r.getNode())) {
                throw spanConflict(
                                instance,
                                span,
                                "already has loader "
                                        + other.getInstance()
                                        + " on node "
                                        + r.getNode()
                                        + "; one loader serves each node of an instance")
                        .with("node", r.getNode())
                        .with("loader", other.getInstance());
            }
            loaders.add(other.getInstance());
        }
        if (loaders.size() > span.getNodes()) {
            throw spanConflict(
                            instance,
                            span,
                            "spans "
                                    + span.getNodes()
                                    + " nodes, but would have "
                                    + loaders.size()
                                    + " loaders: "
                                    + String.join(", ", loaders))
                    .with("loaders", List.copyOf(loaders));
        }
    }

    /**
     * A loader that names its data-plane engine runs control-api's ({@code relay.dataplane.engine})
     * and that of every live loader of its model and group that named one: a plan sends bytes
     * between the group's loaders by segment name, which only an engine of the same kind resolves
     * (and a worker's own Transfer Engine memory only Mooncake reaches), so a mixed group would
     * fail at apply. The live loaders matter beside control-api's engine for loaders registered
     * before control-api was configured anew. A registration that names none is not checked.
     *
     * @param others the live loaders of the registration's model and group
     */
    static void engine(
            String instance,
            LoaderRegistration r,
            DataplaneEngineName controlApi,
            List<Loader> others) {
        DataplaneEngineName mine = r.getDataplaneEngine();
        if (mine == null) {
            return;
        }
        if (mine != controlApi) {
            throw engineMismatch(
                            instance,
                            mine,
                            "control-api runs the "
                                    + controlApi.getValue()
                                    + " engine (relay.dataplane.engine), and the plan's bytes go"
                                    + " through the engine control-api's store was written by")
                    .with("controlApiEngine", controlApi.getValue());
        }
        List<String> loaders = new ArrayList<>();
        List<String> engines = new ArrayList<>();
        for (Loader other : others) {
            if (!other.getInstance().equals(instance)
                    && other.getDataplaneEngine() != null
                    && other.getDataplaneEngine() != mine) {
                loaders.add(other.getInstance());
                engines.add(other.getDataplaneEngine().getValue());
            }
        }
        if (!loaders.isEmpty()) {
            throw engineMismatch(
                            instance,
                            mine,
                            "live loader(s) "
                                    + String.join(", ", loaders)
                                    + " of model "
                                    + r.getModel()
                                    + ", group "
                                    + r.getGroup()
                                    + " run "
                                    + String.join(", ", engines)
                                    + ", whose segments it could not write into nor they into"
                                    + " its")
                    .with("loaders", List.copyOf(loaders))
                    .with("engines", List.copyOf(engines));
        }
    }

    private static RelayException engineMismatch(
            String instance, DataplaneEngineName engine, String detail) {
        return RegistryProblems.DATAPLANE_ENGINE_MISMATCH
                .exception(
                        "loader "
                                + instance
                                + " runs the "
                                + engine.getValue()
                                + " data-plane engine, but "
                                + detail
                                + "; one deployment runs one engine: set relay.dataplane.engine"
                                + " alike on every service")
                .with("instanceId", instance)
                .with("dataplaneEngine", engine.getValue());
    }

    private static RelayException spanConflict(String instance, InstanceSpan span, String detail) {
        return RegistryProblems.ROLLOUT_INSTANCE_CONFLICT
                .exception(
                        "loader "
                                + instance
                                + ": rollout instance "
                                + span.getRolloutInstance()
                                + " "
                                + detail)
                .with("instanceId", instance)
                .with("rolloutInstance", span.getRolloutInstance())
                .with("nodes", span.getNodes());
    }

    /** The problem with {@code worker}; {@code detail} goes on from "worker {id}". */
    private static RelayException invalidPlacement(
            String instance, WorkerPlacement worker, String detail) {
        return RegistryProblems.INVALID_PLACEMENT
                .exception("instance " + instance + ": worker " + worker.getWorkerId() + detail)
                .with("instanceId", instance)
                .with("worker", worker.getWorkerId());
    }
}
