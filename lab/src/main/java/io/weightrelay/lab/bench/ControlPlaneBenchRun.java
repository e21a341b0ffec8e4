package io.weightrelay.lab.bench;

import static io.weightrelay.lab.bench.ControlPlaneBench.LOADER_TOKEN;
import static io.weightrelay.lab.bench.ControlPlaneBench.THREADS;
import static io.weightrelay.lab.bench.ControlPlaneBench.TRAINER_TOKEN;
import static io.weightrelay.lab.bench.ControlPlaneBench.all;
import static io.weightrelay.lab.bench.ControlPlaneBench.describe;

import io.weightrelay.api.ControlManifests;
import io.weightrelay.api.EncodedBody;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.PlacementTemplates;
import io.weightrelay.api.PlanSlices;
import io.weightrelay.api.PrepareRequests;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.StoredObject;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.PlansApi;
import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.UpdatesApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.DataplaneEngineName;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.Loader;
import io.weightrelay.api.control.client.model.LoaderRegistration;
import io.weightrelay.api.control.client.model.OpenGenerationRequest;
import io.weightrelay.api.control.client.model.OpenedGeneration;
import io.weightrelay.api.control.client.model.PlanRequest;
import io.weightrelay.api.control.client.model.PlanSummary;
import io.weightrelay.api.control.client.model.TensorAssignment;
import io.weightrelay.api.control.client.model.UpdatePreparation;
import io.weightrelay.lab.bench.ControlPlaneBench.Figures;
import io.weightrelay.lab.bench.ControlPlaneBench.Players;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.plan.SliceValidator;
import io.weightrelay.reshard.plan.ValidationReport;
import io.weightrelay.testkit.process.ServiceProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.http.HttpHeaders;
import org.springframework.http.client.ClientHttpRequestInterceptor;

/** One run of every player against one control-api. */
final class ControlPlaneBenchRun {
    private static final String GROUP = "bench";

    /** The lease each loader takes on the generation it prepares, as loader-service asks. */
    private static final Duration LEASE_TTL = Duration.ofMinutes(10);

    /** The session's phase deadline, should a loader's prepare start it. */
    private static final Duration PHASE_TIMEOUT = Duration.ofMinutes(2);

    /** Asks for gzip-compressed responses and leaves them compressed. */
    private static final ClientHttpRequestInterceptor ACCEPT_GZIP =
            (request, body, execution) -> {
                request.getHeaders().set(HttpHeaders.ACCEPT_ENCODING, "gzip");
                return execution.execute(request, body);
            };

    private final ServiceProcess control;
    private final Scenario s;
    private final Players behaviour;
    private final long trainerStep;
    private final Wire wire = new Wire();

    /** The trainer's calls, and the publishers': both hold the trainer token. */
    private final GenerationsApi trainer;

    private final RegistryApi registry;

    /** The loaders' client, which also uploads their placement templates. */
    private final ApiClient loaderClient;

    private final Map<List<io.weightrelay.reshard.placement.TargetFragment>, FragmentTemplate>
            templateOf = java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>());
    private final PlansApi plans;
    private final UpdatesApi updates;
    private final LoaderSessionWalk sessions;

    /**
     * The loaders' client for the manifest and a plan slice as a loader's host fetches them: gzip
     * on the wire, inflated by the loader itself, which the bench times as that loader's CPU in
     * {@link #check} (each loader inflates on its own host; 32 of them inflating 12 MB manifests on
     * this machine's cores would time the machine, not a loader).
     */
    private final ApiClient gzipped;

    private final Set<String> store = ConcurrentHashMap.newKeySet();
    private final Figures f = new Figures();
    private final Map<String, Long> epochs = new ConcurrentHashMap<>();

    /** The slowest session watch of the session step. */
    private final AtomicLong watchMs = new AtomicLong();

    /** Each loader's slice, from its prepare: what it reports checksums of when applied. */
    private final Map<String, Slice> slices = new ConcurrentHashMap<>();

    ControlPlaneBenchRun(
            ServiceProcess control, Scenario scenario, Players behaviour, long trainerStep) {
        String baseUrl = control.baseUrl();
        this.control = control;
        this.s = scenario;
        this.behaviour = behaviour;
        this.trainerStep = trainerStep;
        this.trainer = new GenerationsApi(client(baseUrl, TRAINER_TOKEN, true));
        this.loaderClient = client(baseUrl, LOADER_TOKEN, true);
        this.registry = new RegistryApi(loaderClient);
        this.plans = new PlansApi(loaderClient);
        this.updates = new UpdatesApi(loaderClient);
        this.sessions = new LoaderSessionWalk(updates, s.model(), GROUP);
        this.gzipped = client(baseUrl, LOADER_TOKEN, false);
    }

    /**
     * @param inflate whether gzip-compressed responses are inflated as they are read; if not, the
     *     caller gets the bytes that crossed the wire and inflates them itself
     */
    private ApiClient client(String baseUrl, String token, boolean inflate) {
        Endpoint endpoint =
                new Endpoint(baseUrl, token, Duration.ofSeconds(10), behaviour.callTimeout());
        // As the trainer client does: large bodies go gzip-compressed; as publishers and
        // loaders do, responses may come gzip-compressed; the wire counts what actually
        // crosses it (interceptors run in order).
        RelayClients clients = RelayClients.of(endpoint).gzipRequestBodies();
        return (inflate ? clients.gzipResponses() : clients.with(ACCEPT_GZIP)).with(wire).control();
    }

    Figures run() {
        // Each loader heartbeats on its own, as loaders do (one slow answer delays no other).
        ScheduledExecutorService heartbeats = Executors.newScheduledThreadPool(8);
        ExecutorService players = Executors.newCachedThreadPool();
        String current = "open_ms";
        try {
            OpenedGeneration opened = timed(current, this::open);
            long generation = opened.getGeneration().getGeneration();
            Map<String, List<StoredFragment>> byNode = objectsByNode(opened);

            // Every publisher reads the manifest, then registers its node's objects.
            current = "publisher_manifest_ms";
            timed(
                    current,
                    () -> all(players, byNode.keySet(), node -> publisherManifest(generation)));

            current = "register_objects_ms";
            timed(
                    current,
                    () ->
                            all(
                                    players,
                                    byNode.keySet(),
                                    node -> registerObjects(generation, node, byNode.get(node))));

            current = "commit_ms";
            timed(current, () -> trainer.commitGeneration(s.model(), generation));

            current = "register_loaders_ms";
            List<String> instances = s.placement().instances();
            // Building a direct registration holds every fragment of the instance: a few at a
            // time keep the bench's own heap bounded at Kimi-K2 scale.
            ExecutorService registering =
                    Executors.newFixedThreadPool(
                            s.mode() == Mode.DIRECT ? Math.min(8, instances.size()) : 32);
            try {
                timed(current, () -> all(registering, instances, this::registerLoader));
            } finally {
                registering.shutdownNow();
            }
            for (String instance : instances) {
                heartbeats.scheduleAtFixedRate(
                        () -> heartbeat(instance),
                        behaviour.heartbeat().toMillis(),
                        behaviour.heartbeat().toMillis(),
                        TimeUnit.MILLISECONDS);
            }

            current = "plan_cold_ms";
            PlanSummary plan = timed(current, () -> resolve(generation));
            requirePlan(plan);

            current = "plan_warm_ms";
            Duration cpuBefore = control.cpu();
            List<Long> warm =
                    all(
                            players,
                            instances,
                            i -> {
                                long started = System.nanoTime();
                                requirePlan(resolve(generation));
                                return (System.nanoTime() - started) / 1_000_000;
                            });
            f.steps.put(current, warm.stream().mapToLong(Long::longValue).max().orElse(0));
            f.cpu.put(current, control.cpu().minus(cpuBefore).toMillis());

            // prepare_ms per loader: the wall time of its calls (every loader at once, as in
            // an update) plus the CPU time of its own checks; prepare_wall_ms is the whole
            // step on this machine, every loader's checks sharing its cores.
            current = "prepare_ms";
            Duration cpuPrepare = control.cpu();
            long prepareStarted = System.nanoTime();
            List<Fetched> fetched =
                    all(players, instances, i -> fetch(generation, plan.getPlanId(), i));
            f.cpu.put(current, control.cpu().minus(cpuPrepare).toMillis());
            ExecutorService checking =
                    Executors.newFixedThreadPool(
                            Math.max(1, Runtime.getRuntime().availableProcessors()));
            try {
                List<Long> checks = all(checking, fetched, x -> check(generation, x));
                long worst = 0;
                long worstFetch = 0;
                long worstCheck = 0;
                for (int i = 0; i < fetched.size(); i++) {
                    worst = Math.max(worst, fetched.get(i).ms() + checks.get(i));
                    worstFetch = Math.max(worstFetch, fetched.get(i).ms());
                    worstCheck = Math.max(worstCheck, checks.get(i));
                }
                f.steps.put(current, worst);
                f.extra.put("prepare_fetch_ms", worstFetch);
                f.extra.put("prepare_check_cpu_ms", worstCheck);
                for (int c = 0; c < PREPARE_CALLS.size(); c++) {
                    final int call = c;
                    f.extra.put(
                            "prepare_" + PREPARE_CALLS.get(c) + "_ms",
                            fetched.stream().mapToLong(x -> x.callMs()[call]).max().orElse(0));
                }
                f.extra.put("prepare_wall_ms", (System.nanoTime() - prepareStarted) / 1_000_000);
            } finally {
                checking.shutdownNow();
            }

            current = "session_ms";
            timed(current, () -> all(players, instances, i -> session(generation, i)));
            f.extra.put("session_watch_ms", watchMs.get());
        } catch (RuntimeException e) {
            f.failedStep = current;
            f.error = describe(e);
        } finally {
            heartbeats.shutdownNow();
            players.shutdownNow();
        }
        f.retries503 = wire.retries();
        f.largestRequest = wire.largestRequest();
        f.largestResponse = wire.largestResponse();
        return f;
    }

    /** Every loader deregisters, as loader-service does when it stops. */
    void leave() {
        for (String instance : s.placement().instances()) {
            registry.deregisterLoader(instance);
        }
    }

    /** A publisher reads the manifest as publisher-service does. */
    private SourceManifest publisherManifest(long generation) {
        return SourceManifest.decode(ControlManifests.encoded(trainer, s.model(), generation));
    }

    private <T> T timed(String name, Callable<T> body) {
        long started = System.nanoTime();
        Duration cpu = control.cpu();
        T result;
        try {
            result = body.call();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        f.steps.put(name, (System.nanoTime() - started) / 1_000_000);
        f.cpu.put(name, control.cpu().minus(cpu).toMillis());
        return result;
    }

    private OpenedGeneration open() {
        List<String> nodes = new ArrayList<>();
        for (int i = 0; i < s.trainerNodes(); i++) {
            nodes.add(io.weightrelay.reshard.topology.Topology.trainerNodeName(i));
        }
        OpenGenerationRequest request =
                ControlManifests.openRequest(
                        s.manifest(), nodes, trainerStep, Scenario.MAX_FRAGMENT);
        return trainer.openGeneration(s.model(), request);
    }

    /** Each trainer node's objects: the fragments of the tensors assigned to it. */
    private Map<String, List<StoredFragment>> objectsByNode(OpenedGeneration opened) {
        Map<String, String> nodeOf = new LinkedHashMap<>();
        for (TensorAssignment a : opened.getAssignment().getTensors()) {
            nodeOf.put(a.getTensor(), a.getNode());
        }
        Map<String, List<StoredFragment>> out = new LinkedHashMap<>();
        for (StoredFragment fragment : s.manifest().fragments()) {
            String node = nodeOf.get(fragment.tensor());
            if (node == null) {
                throw new IllegalStateException(
                        "the assignment has no node for tensor " + fragment.tensor());
            }
            out.computeIfAbsent(node, n -> new ArrayList<>()).add(fragment);
        }
        return out;
    }

    /**
     * A publisher "stores" its objects (the stand-in) and registers them in chunks, with the body
     * publisher-service sends ({@link StoredObject#registration}).
     */
    private Void registerObjects(long generation, String node, List<StoredFragment> mine) {
        String segment = node + "-segment";
        GenerationId id = new GenerationId(s.model(), generation);
        for (int from = 0; from < mine.size(); from += behaviour.registerChunk()) {
            List<StoredObject> chunk = new ArrayList<>();
            for (StoredFragment fragment :
                    mine.subList(from, Math.min(mine.size(), from + behaviour.registerChunk()))) {
                String key = id.objectKey(fragment.fragment());
                store.add(key);
                long size = fragment.bytes();
                chunk.add(new StoredObject(key, size, Crc32c.format(Crc32c.zeros(size)), segment));
            }
            trainer.registerObjects(s.model(), generation, StoredObject.registration(node, chunk));
            synchronized (f) {
                f.registerRequests++;
            }
        }
        return null;
    }

    /**
     * Registers as loader-service does, through the same {@link PlacementTemplates}: each direct
     * worker's fragments by the digest of their template; on 409 {@code
     * placement-template-not-found}, the templates control-api lacks are uploaded and the
     * registration sent again.
     */
    private Void registerLoader(String instance) {
        List<Worker> workers = s.workersOf(instance);
        Map<String, FragmentTemplate> templates = new LinkedHashMap<>();
        LoaderRegistration registration =
                new LoaderRegistration()
                        .model(s.model())
                        .group(GROUP)
                        .node(workers.get(0).node())
                        .workers(placements(workers, templates))
                        // as loader-service names its engine: control-api checks it against its
                        // own and the group's, so the bench times that check too
                        .dataplaneEngine(DataplaneEngineName.BUILTIN);
        Loader loader =
                PlacementTemplates.register(
                        () -> registry.registerLoader(instance, registration),
                        templates.values(),
                        t -> PlacementTemplates.upload(loaderClient, t));
        epochs.put(instance, loader.getEpoch());
        return null;
    }

    private volatile long imageBytes = -1;

    /** The safetensors image size, laid out once (a loader lays it out once, not per call). */
    private long imageBytes() {
        if (imageBytes < 0) {
            imageBytes = SafetensorsLayout.of(s.manifest()).imageBytes();
        }
        return imageBytes;
    }

    /** The instance's workers as a loader registers them; templates collects their fragments. */
    private List<WorkerPlacement> placements(
            List<Worker> workers, Map<String, FragmentTemplate> templates) {
        long image = imageBytes();
        List<WorkerPlacement> out = new ArrayList<>();
        int rank = 0;
        for (Worker w : workers) {
            WorkerPlacement p = RolloutEngine.registration(w, rank++, image);
            if (w.mode() == Mode.DIRECT) {
                // Encoded once per rank: every instance's rank r shares the fragment list.
                FragmentTemplate t =
                        templateOf.computeIfAbsent(w.fragments(), FragmentTemplate::ofFragments);
                templates.putIfAbsent(t.digest(), t);
                long size = 1;
                for (io.weightrelay.reshard.placement.TargetFragment f : w.fragments()) {
                    size = Math.max(size, f.bufferEnd());
                }
                p.placement(t.digest())
                        .addBuffersItem(
                                new ReceiveBuffer()
                                        .bufferId(Scenario.WEIGHTS)
                                        .segment(w.segment())
                                        .size(size));
            }
            out.add(p);
        }
        return out;
    }

    private void heartbeat(String instance) {
        try {
            registry.heartbeatLoader(instance);
            synchronized (f) {
                f.heartbeats++;
            }
        } catch (RuntimeException e) {
            synchronized (f) {
                f.heartbeatFailures++;
                f.heartbeatError = instance + ": " + describe(e);
            }
        }
    }

    private PlanSummary resolve(long generation) {
        return plans.resolvePlan(
                new PlanRequest().model(s.model()).generation(generation).group(GROUP));
    }

    private void requirePlan(PlanSummary plan) {
        if (!Boolean.TRUE.equals(plan.getValid())) {
            throw new IllegalStateException("plan " + plan.getPlanId() + " is not valid");
        }
        if (!plan.getInstances().containsAll(s.placement().instances())) {
            throw new IllegalStateException(
                    "plan "
                            + plan.getPlanId()
                            + " covers "
                            + plan.getInstances().size()
                            + " instances, not all "
                            + s.placement().instances().size());
        }
    }

    /**
     * What one loader fetched at prepare, and how long its calls took: {@code ms} all of them,
     * {@code callMs} each, in {@link #PREPARE_CALLS} order.
     */
    record Fetched(
            String instance,
            Generation generation,
            EncodedBody manifest,
            EncodedBody slice,
            long ms,
            long[] callMs) {}

    /** The calls a loader makes at prepare, in order; each is reported as its slowest. */
    static final List<String> PREPARE_CALLS = List.of("call", "manifest", "slice");

    /**
     * What a loader fetches at prepare, from control-api, all loaders at once, as loader-service
     * does for a generation whose plan and manifest it has not seen: the one prepare call
     * (generation, plan, session start or join, lease, and the group's buffers, which a loader that
     * names no digest gets listed), its manifest and its own plan slice, with the request and the
     * slice call loader-service makes ({@link PrepareRequests}, {@link PlanSlices}). Returns the
     * bytes as they crossed the wire and the wall time of the calls.
     */
    private Fetched fetch(long generation, String planId, String instance) {
        long[] callMs = new long[PREPARE_CALLS.size()];
        long started = System.nanoTime();
        UpdatePreparation prepared =
                updates.prepareUpdate(
                        s.model(),
                        generation,
                        GROUP,
                        PrepareRequests.of(instance, LEASE_TTL, PHASE_TIMEOUT, null));
        long lap = lap(callMs, 0, started);
        EncodedBody manifest =
                EncodedBody.of(
                        new GenerationsApi(gzipped)
                                .getGenerationManifestEncodedWithResponseSpec(s.model(), generation)
                                .toEntity(byte[].class));
        lap = lap(callMs, 1, lap);
        EncodedBody encoded = PlanSlices.fetch(gzipped, planId, instance);
        lap(callMs, 2, lap);
        if (!planId.equals(prepared.getPlan().getPlanId())) {
            throw new IllegalStateException(
                    instance
                            + ": prepared against plan "
                            + prepared.getPlan().getPlanId()
                            + ", not "
                            + planId);
        }
        if (prepared.getLoaders().size() != s.instances()) {
            throw new IllegalStateException(
                    instance
                            + ": the prepare call lists "
                            + prepared.getLoaders().size()
                            + " loaders of the group");
        }
        return new Fetched(
                instance,
                prepared.getGeneration(),
                manifest,
                encoded,
                (System.nanoTime() - started) / 1_000_000,
                callMs);
    }

    private static long lap(long[] callMs, int call, long since) {
        long now = System.nanoTime();
        callMs[call] = (now - since) / 1_000_000;
        return now;
    }

    /**
     * A loader's own checks at prepare, on what it fetched: the manifest against its digest, the
     * slice against its registration, every object it reads exists. Returns the CPU time of the
     * checking thread in milliseconds: each loader checks on its own host, so 32 of them sharing
     * this machine's cores would time the machine, not a loader.
     */
    private long check(long generation, Fetched fetched) {
        String instance = fetched.instance();
        long started = THREADS.getCurrentThreadCpuTime();
        SourceManifest manifest = SourceManifest.decode(fetched.manifest().inflated());
        if (!manifest.digest().equals(fetched.generation().getManifestDigest())) {
            throw new IllegalStateException(
                    instance + ": the manifest served does not match its digest");
        }
        Slice slice = Slice.decode(fetched.slice().inflated());
        slices.put(instance, slice); // its reads' checksums go with APPLIED
        List<Worker> mine = s.workersOf(instance);
        ValidationReport report =
                SliceValidator.validate(
                        slice,
                        mine,
                        s.mode() == Mode.COMPAT ? SafetensorsLayout.of(manifest) : null);
        if (!report.valid()) {
            throw new IllegalStateException(
                    instance + ": its slice is not valid: " + report.problems());
        }
        GenerationId id = new GenerationId(slice.model(), generation);
        for (int read = 0; read < slice.readCount(); read++) {
            String key = id.objectKey(slice.objectId(slice.readObject(read)));
            if (!store.contains(key)) {
                throw new IllegalStateException(instance + " reads " + key + ", never stored");
            }
        }
        return (THREADS.getCurrentThreadCpuTime() - started) / 1_000_000;
    }

    /**
     * Every phase and barrier of the session the prepare call started or joined, as a loader does;
     * the slowest session watch is kept.
     */
    private Void session(long generation, String instance) {
        long watched =
                sessions.walk(generation, instance, epochs.get(instance), slices.get(instance));
        watchMs.accumulateAndGet(watched, Math::max);
        return null;
    }
}
