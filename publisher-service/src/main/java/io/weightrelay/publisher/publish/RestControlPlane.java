package io.weightrelay.publisher.publish;

import io.weightrelay.api.ControlManifests;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.StoredObject;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.LostRequest;
import io.weightrelay.api.control.client.model.RegisterObjectsRequest;
import io.weightrelay.api.control.client.model.SegmentRegistration;
import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.service.client.RemoteCalls;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClientResponseException;

/**
 * {@link ControlPlane} over control-api's generated REST client. Transient failures (no answer,
 * 503, 429) are retried by the {@code control-api} Resilience4j retry ({@code application.yaml}); a
 * 404 is a missing generation, any other refusal fails the call with the control-api's own detail.
 */
final class RestControlPlane implements ControlPlane {

    private final GenerationsApi generations;
    private final GenerationsApi ownerGenerations;
    private final RegistryApi registry;
    private final RegistryApi registryReader;
    private final RemoteCalls calls;
    private final boolean asOwner;
    private static final org.slf4j.Logger log =
            org.slf4j.LoggerFactory.getLogger(RestControlPlane.class);

    RestControlPlane(PublishProperties properties, RemoteCalls calls) {
        // Several control-api instances may be given, comma-separated: a call fails over.
        Endpoint control =
                new Endpoint(
                        properties.controlApiUrl(),
                        properties.controlApiToken(),
                        properties.controlApiTimeout(),
                        properties.controlApiTimeout());
        ApiClient client = client(control);
        this.generations = new GenerationsApi(client);
        // The segment is the owner's duty: with an owner token it is registered with its admin
        // URL; without one (a deployment from before the owner role) with the trainer token and no
        // admin URL, since control-api refuses an admin URL from anyone but an owner.
        this.asOwner = !properties.ownerToken().isEmpty();
        ApiClient ownerClient = client;
        if (asOwner) {
            ownerClient = client(control.withToken(properties.ownerToken()));
        } else {
            log.warn(
                    "relay.publish.owner-token is not set: the segment is registered with the"
                            + " trainer token and without its admin URL, so control-api cannot"
                            + " call this publisher for checkpoint saves and restores, and"
                            + " refuses its reports of generations lost in a restart");
        }
        this.registry = new RegistryApi(ownerClient);
        // A loss is the owner's word about its own segment: control-api takes it from an owner
        // token only, never from a trainer's.
        this.ownerGenerations = new GenerationsApi(ownerClient);
        // Listing the registry is a read, which the trainer token may do and an owner token may
        // not.
        this.registryReader = new RegistryApi(client);
        this.calls = calls;
    }

    private static ApiClient client(Endpoint control) {
        // The encoded manifest comes gzip-compressed: a twelfth of its bytes at scale.
        return RelayClients.of(control).gzipResponses().control();
    }

    @Override
    public GenerationLayout layout(GenerationId id) {
        String model = id.model();
        long generation = id.generation();
        byte[] encoded =
                call(
                        "read the manifest of " + model + "/" + generation,
                        () -> ControlManifests.encoded(generations, model, generation));
        SourceManifest manifest;
        try {
            manifest = SourceManifest.decode(encoded);
        } catch (RuntimeException e) {
            throw mismatch(
                    "control-api sent an undecodable manifest of "
                            + model
                            + "/"
                            + generation
                            + ": "
                            + e.getMessage());
        }
        return toLayout(id, manifest);
    }

    @Override
    public void register(GenerationId id, String publisher, List<StoredObject> objects) {
        String model = id.model();
        long generation = id.generation();
        RegisterObjectsRequest request = StoredObject.registration(publisher, objects);
        call(
                "register " + objects.size() + " objects of " + model + "/" + generation,
                () -> generations.registerObjects(model, generation, request));
    }

    @Override
    public boolean knowsGeneration(GenerationId id) {
        String model = id.model();
        long generation = id.generation();
        try {
            call(
                    "read " + model + "/" + generation,
                    () -> generations.getGeneration(model, generation));
            return true;
        } catch (RelayException e) {
            if (e.kind() == PublishProblems.GENERATION_NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public SegmentAnswer registerSegment(SegmentOffer offer) {
        SegmentRegistration registration =
                new SegmentRegistration()
                        .node(offer.node())
                        .endpoint(offer.endpoint())
                        .size(offer.size())
                        .adminUrl(asOwner ? offer.adminUrl() : null)
                        .storeEndpoint(offer.storeEndpoint())
                        .role(
                                offer.storageUnit()
                                        ? io.weightrelay.api.control.client.model.SegmentRole
                                                .STORAGE_UNIT
                                        : io.weightrelay.api.control.client.model.SegmentRole
                                                .TRAINER);
        return new SegmentAnswer(
                call(
                                "register segment " + offer.segment(),
                                () -> registry.registerSegment(offer.segment(), registration))
                        .getIncarnation());
    }

    @Override
    public List<SegmentPeer> storageUnits() {
        List<SegmentPeer> out = new ArrayList<>();
        for (var s : call("list segments", registryReader::listSegments)) {
            if (Boolean.TRUE.equals(s.getAlive())
                    && s.getRole()
                            == io.weightrelay.api.control.client.model.SegmentRole.STORAGE_UNIT) {
                out.add(new SegmentPeer(s.getSegment(), s.getNode()));
            }
        }
        return out;
    }

    @Override
    public void loseGeneration(GenerationId id, String segment, long objects, String reason) {
        String model = id.model();
        long generation = id.generation();
        LostRequest request = new LostRequest().segment(segment).objects(objects).reason(reason);
        try {
            call(
                    "mark " + model + "/" + generation + " lost",
                    () -> ownerGenerations.loseGeneration(model, generation, request));
        } catch (RelayException e) {
            if (e.getCause() instanceof RestClientResponseException r
                    && r.getStatusCode().value() == 409
                    && r.getResponseBodyAsString().contains(SEGMENT_HOLDS_NO_OBJECTS)) {
                // The previous life stored objects of it but registered none in this segment
                // (an open generation): control-api has nothing of ours to mark.
                log.info(
                        "generation {} of {} holds no registered object in segment '{}': nothing"
                                + " to mark lost",
                        generation,
                        model,
                        segment);
                return;
            }
            throw e;
        }
    }

    private static final String SEGMENT_HOLDS_NO_OBJECTS =
            "https://weightrelay.io/problems/segment-holds-no-objects";

    @Override
    public int collectGarbage(String model) {
        return call("collect the garbage of " + model, () -> generations.collectGarbage(model))
                .getCollected()
                .size();
    }

    @Override
    public Optional<SegmentAnswer> heartbeatSegment(String segment) {
        try {
            return Optional.of(
                    new SegmentAnswer(
                            call(
                                            "renew segment " + segment,
                                            () -> registry.heartbeatSegment(segment))
                                    .getIncarnation()));
        } catch (RelayException e) {
            if (e.kind() == PublishProblems.GENERATION_NOT_FOUND) {
                return Optional.empty(); // a 404: the registry forgot the segment
            }
            throw e;
        }
    }

    private <T> T call(String what, Supplier<T> body) {
        try {
            return calls.call(body);
        } catch (RestClientResponseException e) {
            if (e.getStatusCode().value() == 404) {
                throw PublishProblems.GENERATION_NOT_FOUND.exception(
                        "control-api: cannot " + what + ": " + e.getResponseBodyAsString(), e);
            }
            throw PublishProblems.CONTROL_API_FAILED
                    .exception(
                            "control-api refused to "
                                    + what
                                    + " ("
                                    + e.getStatusCode().value()
                                    + "): "
                                    + e.getResponseBodyAsString(),
                            e)
                    .with("controlApiStatus", e.getStatusCode().value());
        } catch (ResourceAccessException e) {
            throw PublishProblems.CONTROL_API_FAILED.exception(
                    "control-api did not answer while trying to " + what + ": " + e.getMessage(),
                    e);
        }
    }

    static GenerationLayout toLayout(GenerationId id, SourceManifest manifest) {
        String model = id.model();
        long generation = id.generation();
        Map<String, List<GenerationLayout.Fragment>> byTensor = new HashMap<>();
        Map<String, TensorSpec> specs = new HashMap<>();
        for (TensorSpec t : manifest.tensors()) {
            specs.put(t.name(), t);
            byTensor.put(t.name(), new ArrayList<>());
        }
        for (StoredFragment f : manifest.fragments()) {
            String key = new GenerationId(model, generation).objectKey(f.fragment());
            TensorSpec t = specs.get(f.tensor());
            if (t == null) {
                throw mismatch("fragment " + key + " names unknown tensor " + f.tensor());
            }
            byTensor.get(t.name()).add(contiguous(t, key, f));
        }
        // Each block-FP8 weight fragment names the scale fragment holding its scale rows.
        Map<String, Integer> weightOfScale = BlockScales.weightOfScale(manifest.tensors());
        Map<String, String> scalesOf = new HashMap<>();
        for (Map.Entry<String, Integer> e : weightOfScale.entrySet()) {
            TensorSpec weight = manifest.tensors().get(e.getValue());
            scalesOf.put(e.getKey(), weight.name());
            Map<Long, GenerationLayout.Fragment> scaleByFirst = new HashMap<>();
            for (GenerationLayout.Fragment s : byTensor.get(e.getKey())) {
                scaleByFirst.put(s.firstElement(), s);
            }
            long cols = weight.shape().dim(1);
            long scaleCols = BlockScales.blocks(cols);
            List<GenerationLayout.Fragment> withScales = new ArrayList<>();
            for (GenerationLayout.Fragment f : byTensor.get(weight.name())) {
                long firstRow = cols == 0 ? 0 : f.firstElement() / cols;
                GenerationLayout.Fragment scale =
                        scaleByFirst.get(firstRow / BlockScales.BLOCK * scaleCols);
                if (scale == null) {
                    throw mismatch("no scale fragment for block-FP8 fragment " + f.key());
                }
                withScales.add(
                        new GenerationLayout.Fragment(
                                f.key(),
                                f.firstElement(),
                                f.elements(),
                                scale.key(),
                                scale.elements() * 4));
            }
            byTensor.put(weight.name(), withScales);
        }
        Map<String, GenerationLayout.Tensor> tensors = new HashMap<>();
        for (TensorSpec t : specs.values()) {
            List<GenerationLayout.Fragment> fragments = byTensor.get(t.name());
            fragments.sort(Comparator.comparingLong(GenerationLayout.Fragment::firstElement));
            List<Long> shape = new ArrayList<>(t.shape().rank());
            for (long d : t.shape().dims()) {
                shape.add(d);
            }
            tensors.put(
                    t.name(),
                    new GenerationLayout.Tensor(
                            t.name(),
                            shape,
                            t.trainerDtype(),
                            t.rolloutDtype(),
                            t.shape().numel(),
                            fragments,
                            scalesOf.get(t.name())));
        }
        return new GenerationLayout(id, tensors);
    }

    /** A fragment as an element range; only dim-0 splits (contiguous runs) are publishable. */
    private static GenerationLayout.Fragment contiguous(
            TensorSpec t, String key, StoredFragment f) {
        long[] shape = t.shape().dims();
        long[] offset = f.offset().dims();
        long[] extent = f.shape().dims();
        if (offset.length != shape.length || extent.length != shape.length) {
            throw mismatch("fragment " + key + " has the wrong rank");
        }
        for (int d = 1; d < shape.length; d++) {
            if (offset[d] != 0 || extent[d] != shape[d]) {
                throw mismatch(
                        "fragment "
                                + key
                                + " is not a dim-0 slice of "
                                + t.name()
                                + "; only contiguous fragments can be published");
            }
        }
        long inner = 1;
        for (int d = 1; d < shape.length; d++) {
            inner = Math.multiplyExact(inner, shape[d]);
        }
        long first = shape.length == 0 ? 0 : offset[0] * inner;
        return new GenerationLayout.Fragment(key, first, f.shape().numel());
    }

    private static RelayException mismatch(String detail) {
        return PublishProblems.MANIFEST_MISMATCH.exception(detail);
    }
}
