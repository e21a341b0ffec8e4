package io.weightrelay.loader.control;

import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.retry.RetryRegistry;
import io.weightrelay.api.ControlManifests;
import io.weightrelay.api.EncodedBody;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.PlacementTemplates;
import io.weightrelay.api.PlanSlices;
import io.weightrelay.api.PrepareRequests;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.RemoteProblem;
import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.UpdatesApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.BarrierName;
import io.weightrelay.api.control.client.model.BarrierStatus;
import io.weightrelay.api.control.client.model.DataplaneEngineName;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.LandedDigests;
import io.weightrelay.api.control.client.model.LeaseRequest;
import io.weightrelay.api.control.client.model.Loader;
import io.weightrelay.api.control.client.model.LoaderRegistration;
import io.weightrelay.api.control.client.model.PhaseReport;
import io.weightrelay.api.control.client.model.PlanSummary;
import io.weightrelay.api.control.client.model.ReportedPhase;
import io.weightrelay.api.control.client.model.SentDigests;
import io.weightrelay.api.control.client.model.UpdatePreparation;
import io.weightrelay.api.control.client.model.UpdatePreparationRequest;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.pipeline.BufferSpec;
import io.weightrelay.loader.pipeline.WorkerBuffers;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.service.client.RemoteCalls;
import io.weightrelay.service.dataplane.DataplaneSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClientException;
import org.springframework.web.client.RestClientResponseException;

/** {@link ControlPlane} over the generated control-api client. */
@Component
public class RestControlPlane implements ControlPlane {

    private final GenerationsApi generations;
    private final RegistryApi registry;
    private final UpdatesApi updates;
    private final String advertiseUrl;
    private final DataplaneSettings settings;
    private final Environment environment;
    private final ApiClient client;
    private final RemoteCalls calls;

    /**
     * @throws io.weightrelay.service.dataplane.DataplaneSettingsException when {@code
     *     relay.loader.advertise-url} is a URL peers cannot reach (see {@link
     *     DataplaneSettings#checkAdvertisedUrl})
     */
    public RestControlPlane(
            LoaderProperties properties,
            ControlClientProperties timeouts,
            RetryRegistry retries,
            CircuitBreakerRegistry breakers,
            DataplaneSettings settings,
            Environment environment) {
        // Several control-api instances may be given, comma-separated: a call fails over.
        Endpoint control =
                new Endpoint(
                        properties.controlUrl(),
                        properties.token(),
                        timeouts.connectTimeout(),
                        timeouts.readTimeout());
        ApiClient client = RelayClients.of(control).control();
        this.client = client;
        this.calls = RemoteCalls.named("control-api", retries, breakers);
        this.generations = new GenerationsApi(client);
        this.registry = new RegistryApi(client);
        this.updates = new UpdatesApi(client);
        this.advertiseUrl = properties.advertiseUrl();
        this.settings = settings;
        this.environment = environment;
        if (!advertiseUrl.isBlank()) {
            settings.checkAdvertisedUrl("relay.loader.advertise-url", advertiseUrl);
        }
    }

    /**
     * {@code relay.loader.advertise-url}, else derived from {@code relay.dataplane.advertise-host}.
     */
    private String advertiseUrl() {
        return settings.advertisedUrl(advertiseUrl, environment, 8082);
    }

    /**
     * Runs {@code body} with the {@code control-api} retry; an answer without a body is a call that
     * got no answer (a control-api killed mid-call), retried as one and named when the retries run
     * out, never a null handed on.
     */
    private <T> T call(String what, Supplier<T> body) {
        try {
            return calls.call(
                    () -> {
                        T answer = body.get();
                        if (answer == null) {
                            throw new ResourceAccessException("control-api sent no answer");
                        }
                        return answer;
                    });
        } catch (RestClientResponseException e) {
            RemoteProblem problem = RemoteProblem.of(e);
            throw new ControlPlaneException(
                    what + ": control-api answered " + problem.status() + " " + detail(e),
                    problem,
                    e);
        } catch (RestClientException e) {
            throw new ControlPlaneException(
                    what + ": control-api unreachable: " + e.getMessage(), e);
        }
    }

    private void run(String what, Runnable body) {
        call(
                what,
                () -> {
                    body.run();
                    return Boolean.TRUE;
                });
    }

    private static String detail(RestClientResponseException e) {
        String body = e.getResponseBodyAsString();
        return body.length() > 500 ? body.substring(0, 500) : body;
    }

    /**
     * Registers the loader with each direct worker's fragments as a template digest. Templates
     * control-api does not hold yet are uploaded (once per layout across the deployment: every
     * instance of the same layout names the same ones) and the registration is sent again.
     */
    @Override
    public long registerLoader(InstanceRegistration registration) {
        String instance = registration.getInstanceId();
        Map<String, FragmentTemplate> templates = new LinkedHashMap<>();
        List<WorkerPlacement> placed = new ArrayList<>();
        for (WorkerPlacement w : registration.getWorkers()) {
            WorkerPlacement p = header(w);
            if (p.getMode() == ConsumeMode.DIRECT) {
                FragmentTemplate t;
                try {
                    t = template(w);
                } catch (IllegalArgumentException malformed) {
                    // Not encodable as a template (say, ranks that differ): send the fragments
                    // inline, so control-api refuses them with the problem that names the
                    // instance, worker, tensor and fragment, as for any other bad placement.
                    placed.add(p.fragments(w.getFragments()));
                    continue;
                }
                templates.putIfAbsent(t.digest(), t);
                p.setPlacement(t.digest());
            }
            placed.add(p);
        }
        LoaderRegistration body = body(registration, placed, advertiseUrl(), settings.engine());
        Loader loader =
                PlacementTemplates.register(
                        () ->
                                call(
                                        "register loader " + instance,
                                        () -> registry.registerLoader(instance, body)),
                        templates.values(),
                        this::putTemplate);
        return loader.getEpoch();
    }

    /**
     * The registration control-api is sent: the instance's model, group, node and span, the workers
     * as {@link #header} made them, and this loader's data-plane engine, which control-api checks
     * against its own and the group's (409 {@code dataplane-engine-mismatch}).
     */
    static LoaderRegistration body(
            InstanceRegistration registration,
            List<WorkerPlacement> workers,
            String endpoint,
            io.weightrelay.dataplane.DataplaneEngine engine) {
        return new LoaderRegistration()
                .model(registration.getModel())
                .group(registration.getGroup())
                .node(registration.getNode())
                .endpoint(endpoint)
                .span(registration.getSpan())
                .workers(workers)
                .dataplaneEngine(DataplaneEngineName.fromValue(engine.label()));
    }

    private void putTemplate(FragmentTemplate t) {
        run("store fragment template " + t.digest(), () -> PlacementTemplates.upload(client, t));
    }

    /** The worker's fragments, in its order, as a template. */
    static FragmentTemplate template(WorkerPlacement w) {
        return FragmentTemplate.of(Instance.fragments(w));
    }

    /**
     * What control-api is told of a worker: the worker without its fragments (they go as a
     * template, or inline when they cannot be one) and its buffers without their Transfer Engine
     * memory; a new object, so the registration the loader keeps is not changed. The planner plans
     * by segment name and offset and never addresses that memory: every sender's data plane finds
     * it by the segment name this loader published for it. What the memory implies for a plan, that
     * only a Mooncake-engine sender reaches it, control-api learns from the registration's {@code
     * dataplaneEngine} (the same for every buffer of the loader), which it checks against its own
     * engine and the group's at registration.
     */
    static WorkerPlacement header(WorkerPlacement w) {
        List<ReceiveBuffer> buffers = new ArrayList<>(w.getBuffers().size());
        for (ReceiveBuffer b : w.getBuffers()) {
            buffers.add(new ReceiveBuffer(b.getBufferId(), b.getSegment(), b.getSize()));
        }
        return new WorkerPlacement(w.getWorkerId(), w.getNode(), w.getNic(), w.getMode(), buffers)
                .rank(w.getRank());
    }

    @Override
    public void heartbeatLoader(String instance) {
        run("heartbeat of loader " + instance, () -> registry.heartbeatLoader(instance));
    }

    @Override
    public void deregisterLoader(String instance) {
        run("deregister loader " + instance, () -> registry.deregisterLoader(instance));
    }

    @Override
    public GenerationRef activeGeneration(String model) {
        return ref(
                call(
                        "active generation of " + model,
                        () -> generations.getActiveGeneration(model)));
    }

    private static GenerationRef ref(Generation g) {
        return new GenerationRef(
                g.getGeneration(), state(g), g.getManifestDigest(), g.getCorruptObject());
    }

    /**
     * The state control-api reported. The contract's states and this loader's are the same five; an
     * answer without one is a control-plane error naming the generation.
     */
    private static ControlPlane.GenerationState state(Generation g) {
        if (g.getState() == null) {
            throw new ControlPlaneException(
                    "control-api answered generation " + g.getGeneration() + " without a state",
                    null);
        }
        return ControlPlane.GenerationState.valueOf(g.getState().getValue());
    }

    @Override
    public SourceManifest manifest(GenerationId id) {
        String model = id.model();
        long generation = id.generation();
        byte[] encoded =
                call(
                        "manifest of " + id.path(),
                        () -> ControlManifests.encoded(generations, model, generation));
        try {
            return SourceManifest.decode(encoded);
        } catch (RuntimeException e) {
            throw new ControlPlaneException(
                    "manifest of "
                            + model
                            + "/"
                            + generation
                            + ": control-api sent an undecodable encoding: "
                            + e.getMessage(),
                    e);
        }
    }

    /**
     * Asks for the slice gzip-compressed (control-api compressed it once, when it computed the
     * plan: a sixth of the bytes cross the wire) and decodes it; an identity answer is decoded as
     * it comes.
     */
    @Override
    public Slice slice(String planId, String instance) {
        String what = "slice of " + instance + " in plan " + planId;
        EncodedBody answer = call(what, () -> PlanSlices.fetch(client, planId, instance));
        try {
            return Slice.decode(answer.inflated());
        } catch (RuntimeException e) {
            throw new ControlPlaneException(
                    what + ": control-api sent an undecodable encoding: " + e.getMessage(), e);
        }
    }

    @Override
    public Preparation prepare(PrepareCall c) {
        UpdatePreparationRequest body =
                PrepareRequests.of(
                        c.instance(), c.leaseTtl(), c.phaseTimeout(), c.knownBuffersDigest());
        UpdatePreparation answer =
                call(
                        "prepare of " + c.instance() + " for " + c.model() + "/" + c.generation(),
                        () -> updates.prepareUpdate(c.model(), c.generation(), c.group(), body));
        PlanSummary plan = answer.getPlan();
        return new Preparation(
                ref(answer.getGeneration()),
                new PlanRef(
                        plan.getPlanId(),
                        Boolean.TRUE.equals(plan.getValid()),
                        plan.getInstances()),
                answer.getBuffersDigest(),
                answer.getLoaders() == null ? List.of() : buffers(answer.getLoaders()),
                answer.getSession() == null ? null : answer.getSession().getAttempt());
    }

    /** Every worker's buffers, loader by loader as control-api listed them. */
    private static List<WorkerBuffers> buffers(List<Loader> loaders) {
        List<WorkerBuffers> out = new ArrayList<>();
        for (Loader l : loaders) {
            for (WorkerPlacement w : l.getWorkers()) {
                out.add(
                        new WorkerBuffers(
                                w.getWorkerId(),
                                w.getBuffers().stream()
                                        .map(
                                                b ->
                                                        new BufferSpec(
                                                                b.getBufferId(),
                                                                b.getSegment(),
                                                                b.getSize()))
                                        .toList()));
            }
        }
        return out;
    }

    @Override
    public void report(SessionKey session, Report r) {
        PhaseReport body = body(r);
        run(
                "report " + r.phase() + " of " + r.instance(),
                () ->
                        updates.reportUpdatePhase(
                                session.model(), session.generation(), session.group(), body));
    }

    @Override
    public BarrierState arrive(SessionKey session, Report r, Barrier barrier, Duration wait) {
        PhaseReport body = body(r);
        return state(
                call(
                        "report " + r.phase() + " of " + r.instance() + " at " + barrier.wire(),
                        () ->
                                updates.arriveAtBarrier(
                                        session.model(),
                                        session.generation(),
                                        session.group(),
                                        BarrierName.fromValue(barrier.wire()),
                                        body,
                                        waitSeconds(wait))));
    }

    private static PhaseReport body(Report r) {
        return new PhaseReport()
                .instance(r.instance())
                .epoch(r.epoch())
                .phase(ReportedPhase.fromValue(r.phase().name()))
                .attempt(r.attempt())
                .bytesRead(r.bytesRead())
                .bytesPushed(r.bytesPushed())
                .bytesReceived(r.bytesReceived())
                .failingPeer(r.failingPeer())
                .servesThroughFetch(r.servesThroughFetch() ? Boolean.TRUE : null)
                .checksums(r.checksums() == null ? null : r.checksums().encode())
                .durations(
                        r.durations() == null
                                ? null
                                : new io.weightrelay.api.common.model.PhaseDurations()
                                        .fetchMs(r.durations().fetchMs())
                                        .installMs(r.durations().installMs())
                                        .pauseMs(r.durations().pauseMs()))
                .sent(
                        r.phase() != Reported.SENT
                                ? null
                                : r.sent().entrySet().stream()
                                        .sorted(java.util.Map.Entry.comparingByKey())
                                        .map(
                                                e ->
                                                        new SentDigests()
                                                                .instance(e.getKey())
                                                                .digests(e.getValue()))
                                        .toList())
                .error(
                        r.error() == null || r.error().length() <= 4000
                                ? r.error()
                                : r.error().substring(0, 4000));
    }

    @Override
    public java.util.Map<String, byte[]> landed(SessionKey session, String instance) {
        LandedDigests answer =
                call(
                        "what was sent to " + instance,
                        () ->
                                updates.getLandedDigests(
                                        session.model(),
                                        session.generation(),
                                        session.group(),
                                        instance));
        java.util.Map<String, byte[]> out = new java.util.TreeMap<>();
        if (answer.getSenders() != null) {
            for (SentDigests s : answer.getSenders()) {
                out.put(s.getInstance(), s.getDigests());
            }
        }
        return out;
    }

    @Override
    public BarrierState awaitBarrier(SessionKey session, Barrier barrier, Duration wait) {
        BarrierStatus s =
                call(
                        "barrier " + barrier.wire(),
                        () ->
                                updates.awaitBarrier(
                                        session.model(),
                                        session.generation(),
                                        session.group(),
                                        BarrierName.fromValue(barrier.wire()),
                                        waitSeconds(wait)));
        return state(s);
    }

    private static int waitSeconds(Duration wait) {
        return (int) Math.max(0, Math.min(300, wait.toSeconds()));
    }

    private static BarrierState state(BarrierStatus s) {
        return new BarrierState(
                Boolean.TRUE.equals(s.getOpen()),
                Boolean.TRUE.equals(s.getFailed()),
                s.getFailedInstance(),
                s.getFailure(),
                s.getWaiting());
    }

    @Override
    public void acquireLease(GenerationId id, String holder, Duration ttl) {
        LeaseRequest request = new LeaseRequest();
        request.setHolder(holder);
        request.setTtlSeconds(PrepareRequests.leaseSeconds(ttl));
        run(
                "lease " + id.path(),
                () -> generations.acquireLease(id.model(), id.generation(), request));
    }

    @Override
    public void releaseLease(GenerationId id, String holder) {
        run(
                "release lease on " + id.path(),
                () -> generations.releaseLease(id.model(), id.generation(), holder));
    }
}
