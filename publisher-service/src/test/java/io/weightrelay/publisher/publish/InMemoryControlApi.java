package io.weightrelay.publisher.publish;

import io.weightrelay.api.control.client.model.Dtype;
import io.weightrelay.api.control.client.model.GenerationManifest;
import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.trainer.client.Coordinator;
import io.weightrelay.trainer.client.Dtypes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * control-api's generation lifecycle in memory, for tests that run without a control-api process:
 * both the trainer coordinator's side (open, commit, abort) and the publisher's (layout,
 * registration), with control-api's rules: only manifest fragments of their exact size register,
 * commit needs every fragment registered, an aborted generation never becomes active.
 */
public final class InMemoryControlApi implements Coordinator, ControlPlane {

    /** The state of one generation. */
    public enum State {
        OPEN,
        ACTIVE,
        RETIRED,
        ABORTED
    }

    private final Map<String, Long> lastGeneration = new ConcurrentHashMap<>();
    private final Map<String, SourceManifest> manifests = new ConcurrentHashMap<>();
    private final Map<String, State> states = new ConcurrentHashMap<>();
    private final Map<String, Map<String, StoredObject>> registered = new ConcurrentHashMap<>();
    private final Map<String, String> abortReasons = new ConcurrentHashMap<>();
    private final Map<String, String> segments = new ConcurrentHashMap<>();
    private volatile boolean refuseRegistrations;

    /** From now on, registrations are refused as control-api would on a conflict. */
    public void refuseRegistrations(boolean refuse) {
        this.refuseRegistrations = refuse;
    }

    @Override
    public synchronized OpenedGeneration open(
            SourceManifest manifest, List<String> trainerNodes, long trainerStep) {
        long generation = lastGeneration.merge(manifest.model(), 1L, Long::sum);
        String id = id(manifest.model(), generation);
        manifests.put(id, manifest);
        states.put(id, State.OPEN);
        registered.put(id, new ConcurrentHashMap<>());
        List<Node> nodes = new ArrayList<>();
        for (String n : trainerNodes) {
            nodes.add(new Node(n, Role.TRAINER, 1, 100));
        }
        PublisherAssignment assignment = PublisherAssignment.assign(manifest, new Topology(nodes));
        return new OpenedGeneration(generation, assignment.byTensorName(manifest));
    }

    @Override
    public synchronized void commit(String model, long generation) {
        String id = id(model, generation);
        requireOpen(id);
        SourceManifest manifest = manifests.get(id);
        Map<String, StoredObject> objects = registered.get(id);
        for (StoredFragment f : manifest.fragments()) {
            if (!objects.containsKey(ObjectKeys.key(model, generation, f.fragment()))) {
                throw CommonProblems.CONFLICT.exception(
                        "fragment " + f.fragment() + " is not registered");
            }
        }
        states.replaceAll(
                (k, s) -> k.startsWith(model + "/") && s == State.ACTIVE ? State.RETIRED : s);
        states.put(id, State.ACTIVE);
    }

    @Override
    public synchronized void abort(String model, long generation, String reason) {
        String id = id(model, generation);
        requireOpen(id);
        states.put(id, State.ABORTED);
        abortReasons.put(id, reason);
    }

    @Override
    public GenerationLayout layout(String model, long generation) {
        SourceManifest manifest = manifests.get(id(model, generation));
        if (manifest == null) {
            throw PublishProblems.GENERATION_NOT_FOUND.exception("no " + id(model, generation));
        }
        return RestControlPlane.toLayout(model, generation, toApi(manifest, generation));
    }

    @Override
    public void register(
            String model, long generation, String publisher, List<StoredObject> objects) {
        String id = id(model, generation);
        if (refuseRegistrations) {
            throw PublishProblems.CONTROL_API_FAILED.exception(
                    "control-api refused to register objects of " + id);
        }
        requireOpen(id);
        Map<String, Long> sizes = new HashMap<>();
        for (StoredFragment f : manifests.get(id).fragments()) {
            sizes.put(ObjectKeys.key(model, generation, f.fragment()), f.bytes());
        }
        for (StoredObject o : objects) {
            if (!Long.valueOf(o.size()).equals(sizes.get(o.key()))) {
                throw CommonProblems.CONFLICT.exception("object " + o.key() + " is not a fragment");
            }
            registered.get(id).put(o.key(), o);
        }
    }

    @Override
    public void registerSegment(
            String segment, String node, String endpoint, long size, String adminUrl) {
        segments.put(segment, node);
    }

    @Override
    public boolean heartbeatSegment(String segment) {
        return segments.containsKey(segment);
    }

    /** Registered segment owners: segment to node. */
    public Map<String, String> segments() {
        return Map.copyOf(segments);
    }

    public State state(String model, long generation) {
        return states.get(id(model, generation));
    }

    public String abortReason(String model, long generation) {
        return abortReasons.get(id(model, generation));
    }

    public Map<String, StoredObject> registered(String model, long generation) {
        return Map.copyOf(registered.get(id(model, generation)));
    }

    private void requireOpen(String id) {
        if (states.get(id) != State.OPEN) {
            throw CommonProblems.CONFLICT.exception(id + " is " + states.get(id));
        }
    }

    private static GenerationManifest toApi(SourceManifest manifest, long generation) {
        var api =
                new io.weightrelay.api.control.client.model.SourceManifest()
                        .model(manifest.model());
        for (TensorSpec t : manifest.tensors()) {
            api.addTensorsItem(
                    new io.weightrelay.api.control.client.model.TensorSpec()
                            .name(t.name())
                            .shape(list(t.shape().dims()))
                            .trainerDtype(Dtype.fromValue(Dtypes.apiName(t.trainerDtype())))
                            .rolloutDtype(Dtype.fromValue(Dtypes.apiName(t.rolloutDtype()))));
        }
        GenerationManifest out =
                new GenerationManifest().manifest(api).manifestDigest(manifest.digest());
        for (StoredFragment f : manifest.fragments()) {
            out.addFragmentsItem(
                    new io.weightrelay.api.control.client.model.StoredFragment()
                            .key(ObjectKeys.key(manifest.model(), generation, f.fragment()))
                            .tensor(f.tensor())
                            .offset(list(f.offset().dims()))
                            .shape(list(f.shape().dims()))
                            .bytes(f.bytes()));
        }
        return out;
    }

    private static List<Long> list(long[] dims) {
        List<Long> out = new ArrayList<>();
        for (long d : dims) {
            out.add(d);
        }
        return out;
    }

    private static String id(String model, long generation) {
        return model + "/" + generation;
    }
}
