package io.weightrelay.lab.cluster;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.api.control.client.model.CheckpointStatus;
import io.weightrelay.api.control.client.model.GcReport;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.Loader;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * A whole lab on this machine: control-api, one publisher per trainer node label and one loader per
 * rollout instance, each a real service in its own JVM on loopback, with the simulated trainer and
 * rollout engines driving them from this JVM over REST and shared memory. Everything it started is
 * stopped by {@link #close()}. Not thread safe.
 *
 * <p>The one door the demo, the benches, the fault suite and the tests use; the work is done by
 * {@link LabProcesses} (child JVMs and health), {@link LabServices} (which process serves which
 * role), {@link LabServiceArgs} (what each service is told), {@link SimulatedEngines} (the trainer
 * and the engines, verification), {@link LabControlPlane} (what the lab asks control-api) and
 * {@link LabStore} (the store behind the services' backs). The hooks that break a running lab are
 * {@link LabFaults}, reached by {@link #faults()}.
 */
public final class LabCluster implements Cluster {

    /**
     * What to run. Two trainer and two rollout node labels unless said otherwise.
     *
     * @param mode every instance's mode, or null for both modes in one lab ({@link #bothModes}):
     *     even instances in compatibility mode, odd ones parameter-direct, so each rollout node
     *     holds some of each
     */
    public record Spec(
            String model,
            int instances,
            int tp,
            Mode mode,
            long seed,
            int trainerNodes,
            int rolloutNodes,
            Site site,
            Serving serving) {

        /**
         * This lab with experts sharded by {@code ep} over each instance's ranks, data-parallel
         * attention or not, and rollout weights in {@code rolloutDtype} ({@code F8_E4M3}: the
         * block-FP8 serving checkpoint, converted by the publishers from what the trainer publishes
         * in BF16).
         */
        public Spec wide(int ep, boolean dpAttention, DType rolloutDtype) {
            return with(site, new Serving(ep, dpAttention, rolloutDtype));
        }

        /** This lab on another site: its services use that Redis and run that checkout's jars. */
        public Spec on(Site other) {
            return with(other, serving);
        }

        private Spec with(Site site, Serving serving) {
            return new Spec(
                    model, instances, tp, mode, seed, trainerNodes, rolloutNodes, site, serving);
        }

        /**
         * Only the rollout side (no Redis, no checkout, one trainer node): enough to work out the
         * placement ({@link LabCatalog#placementFor}) away from a running lab, as a host agent
         * does.
         */
        public static Spec rolloutOnly(
                String model, int instances, int tp, Mode mode, int rolloutNodes) {
            return new Spec(
                    model,
                    instances,
                    tp,
                    mode,
                    1,
                    1,
                    rolloutNodes,
                    new Site("unused", 0, null),
                    Serving.TENSOR_PARALLEL);
        }

        public static Spec of(String model, int instances, int tp, Mode mode) {
            return new Spec(
                    model, instances, tp, mode, 1, 2, 2, Site.local(), Serving.TENSOR_PARALLEL);
        }

        /** Half the instances in each mode, alternating; see {@link Spec#mode()}. */
        public static Spec bothModes(String model, int instances, int tp) {
            return of(model, instances, tp, null);
        }

        /** The mode of the instance at {@code index} of the placement. */
        public Mode modeOf(int index) {
            return mode != null ? mode : index % 2 == 0 ? Mode.COMPAT : Mode.DIRECT;
        }

        /** {@code compat}, {@code direct} or, for a lab of both, {@code both}. */
        public String modeName() {
            return mode == null ? "both" : mode.name().toLowerCase(Locale.ROOT);
        }

        /** {@code redis://host:port} of the Redis the services use. */
        public String redisUri() {
            return "redis://" + site.redisHost() + ":" + site.redisPort();
        }
    }

    /**
     * Where a lab's services come from: the Redis they share and the checkout whose service jars
     * they run.
     */
    public record Site(String redisHost, int redisPort, Path root) {

        /**
         * The lab's Redis ({@link RunRedis#configured()}: the one {@code ./relay} chose, else
         * {@code 127.0.0.1:6379}) and the checkout this JVM runs from.
         */
        public static Site local() {
            RunRedis.Address redis = RunRedis.configured();
            return new Site(redis.host(), redis.port(), ServiceProcess.home());
        }
    }

    /**
     * How the rollout instances serve the model: experts sharded by {@code ep} over each instance's
     * ranks, data-parallel attention or not, and the rollout weights' dtype.
     */
    public record Serving(int ep, boolean dpAttention, DType rolloutDtype) {

        /** Tensor parallelism only, BF16 rollout weights. */
        public static final Serving TENSOR_PARALLEL = new Serving(1, false, DType.BF16);

        public Serving {
            if (rolloutDtype != DType.BF16 && rolloutDtype != DType.F8_E4M3) {
                throw new IllegalArgumentException(
                        "the lab publishes bf16 and serves bf16 or f8_e4m3, not " + rolloutDtype);
            }
        }
    }

    private final Spec spec;
    private final String run = UUID.randomUUID().toString().substring(0, 8);

    /** Every credential of this run, handed to the services in files. */
    private final LabSecrets secrets;

    private final String operatorToken;
    private final Path logs;
    private final SourceManifest manifest;
    private final TargetPlacement placement;
    private final List<LabCatalog.LoaderSlot> slots;
    private final LabServiceArgs args;
    private final LabProcesses processes;
    private final LabServices services;
    private final SimulatedEngines engines;
    private final LabFaults faults;

    /** What the lab asks control-api, once its services run (again after a full restart). */
    private LabControlPlane controlPlane;

    private LabCluster(Spec spec, LabOptions options) throws IOException {
        this.spec = spec;
        this.logs = Files.createTempDirectory("wr-lab-" + run);
        KilledLabs.record(logs, run, spec.redisUri());
        this.secrets = LabSecrets.create(run);
        this.operatorToken = secrets.operator();
        this.manifest = LabCatalog.publishedManifest(spec);
        this.placement = LabCatalog.placementFor(manifest, spec);
        this.slots = LabCatalog.loaderSlots(placement);
        this.args = new LabServiceArgs(spec, run, secrets, options, slots);
        this.processes = new LabProcesses(spec, logs);
        this.services =
                new LabServices(
                        spec, options, manifest, slots, args, processes, this::operatorClient);
        this.engines = new SimulatedEngines(spec, manifest, placement, slots, secrets);
        this.faults =
                new LabFaults(
                        spec,
                        args,
                        processes,
                        services,
                        engines,
                        secrets,
                        LabCluster::client,
                        () -> showingLogsOnFailure(this::startServices));
    }

    /** Every loader of this lab, in the order of {@link #engines()}. */
    public List<LabCatalog.LoaderSlot> loaderSlots() {
        return slots;
    }

    /** Starts every service, waits until all are healthy and registers every engine. */
    public static LabCluster start(Spec spec) throws Exception {
        return start(spec, true);
    }

    /**
     * As {@link #start(Spec)}; {@code checksums} false turns the end-to-end checksum proof off in
     * control-api and every loader, only to measure what it costs ({@code bench update
     * --no-checksums}).
     */
    public static LabCluster start(Spec spec, boolean checksums) throws Exception {
        return start(spec, checksums, 1);
    }

    /**
     * As {@link #start(Spec, boolean)} with {@code controlApis} control-api instances behind the
     * same Redis and key prefix: every publisher, loader, the trainer and the lab's operator client
     * get all their URLs and fail over between them ({@link io.weightrelay.api.BaseUrlFailover}).
     */
    public static LabCluster start(Spec spec, boolean checksums, int controlApis) throws Exception {
        if (controlApis < 1) {
            throw new IllegalArgumentException("controlApis must be at least 1: " + controlApis);
        }
        return start(spec, new LabOptions(checksums, controlApis, false, 0, List.of()));
    }

    /**
     * As {@link #start(Spec, boolean, int)} with one control-api instance per entry of {@code
     * skews}, each started with its clock off by that much ({@code relay.clock.skew}, a
     * fault-injection knob), and the publishers and loaders spread over them: the k-th client
     * started lists instance k mod n first (and fails over to the others), so every instance serves
     * registrations, heartbeats, leases and reports that the others judge.
     */
    public static LabCluster startWithSkewedControlApis(
            Spec spec, boolean checksums, List<Duration> skews) throws Exception {
        if (skews.isEmpty()) {
            throw new IllegalArgumentException("at least one control-api skew is needed");
        }
        return start(spec, new LabOptions(checksums, skews.size(), false, 0, List.copyOf(skews)));
    }

    /**
     * As {@link #start(Spec)}, with every publisher's store segment {@code segmentBytes} long
     * instead of sized for the active generation plus a whole generation's staging: a segment that
     * holds only a few generations wraps around within a few publishes, so retired generations must
     * be collected for the next to fit.
     */
    public static LabCluster startWithSegments(Spec spec, long segmentBytes) throws Exception {
        if (segmentBytes <= 0) {
            throw new IllegalArgumentException("segmentBytes must be positive: " + segmentBytes);
        }
        return start(spec, new LabOptions(true, 1, false, segmentBytes, List.of()));
    }

    /**
     * A lab whose trainer nodes each run a storage unit (a publisher with {@code
     * relay.segment.role=storage-unit}, owning the node's segment under the same name) and a
     * client-only publisher beside the trainer ranks ({@code role=client}, size 0, file staging)
     * that stores into its node's unit over the local transport. Only the units own store memory,
     * so only they are called by a checkpoint save.
     */
    public static LabCluster startWithStorageUnits(Spec spec) throws Exception {
        return start(spec, new LabOptions(true, 1, true, 0, List.of()));
    }

    private static LabCluster start(Spec spec, LabOptions options) throws Exception {
        LabProcesses.beforeStart(spec);
        LabCluster lab = new LabCluster(spec, options);
        return StartedOrClosed.start(lab, lab::startServices);
    }

    /** Starts every service, then connects the trainer and registers every engine. */
    private void startServices() throws Exception {
        services.startAll();
        controlPlane =
                new LabControlPlane(
                        spec.model(),
                        operatorClient(controlUrls()),
                        operatorClient(services.control().baseUrl()));
        engines.connectTrainer(services.publisherUrls(), controlUrls());
        engines.registerAll(services.loaderUrls());
    }

    @Override
    public SourceManifest manifest() {
        return manifest;
    }

    @Override
    public TargetPlacement placement() {
        return placement;
    }

    public List<RolloutEngine> engines() {
        return engines.engines();
    }

    public String controlUrl() {
        return services.control().baseUrl();
    }

    /**
     * Every control-api instance's URL, comma-separated, as the services and the trainer are given
     * them (one URL when the lab runs one instance).
     */
    public String controlUrls() {
        return services.controlUrls();
    }

    /** How many control-api instances this lab started. */
    public int controlApiCount() {
        return services.controlApiCount();
    }

    /** control-api's Redis key prefix in this lab (sessions, generations, the registry). */
    public String controlPrefix() {
        return args.controlPrefix();
    }

    /** The lab's spec (its Redis, model and shape). */
    @Override
    public Spec spec() {
        return spec;
    }

    @Override
    public Path logs() {
        return logs;
    }

    /** The simulated trainer publishes the generation of {@code step}; returns its id. */
    public long publish(long step) {
        return engines.publish(step);
    }

    @Override
    public Published publishGeneration(long step) {
        long started = System.nanoTime();
        return new Published(publish(step), (System.nanoTime() - started) / 1e9, Optional.empty());
    }

    /** None: every service of this lab runs on this machine, on loopback. */
    @Override
    public Optional<HostLab> hosts() {
        return Optional.empty();
    }

    /**
     * Tensor name to the trainer node whose publisher stored it in {@code generation} (the
     * assignment control-api gave when this lab's trainer opened the generation).
     */
    public Map<String, String> nodeOfTensor(long generation) {
        return engines.nodeOfTensor(generation);
    }

    /**
     * The operating-system ids of the lab's services by role ({@code control-api}, {@code
     * publishers}, {@code loaders}, and {@code storage-units} where it runs them), as they run now.
     */
    public Map<String, List<Long>> servicePids() {
        return services.pids();
    }

    /** Updates every engine to the active generation, all at once. */
    @Override
    public LabUpdate updateAll() throws Exception {
        return update(engines());
    }

    /** Updates the given engines together (for example one restarted instance). */
    public LabUpdate update(List<RolloutEngine> which) throws Exception {
        return engines.update(which);
    }

    @Override
    public LabUpdate updateInstances(List<String> instances) throws Exception {
        return update(engines.of(instances));
    }

    /** Checks every byte the engines of {@code update} hold now, in this JVM. */
    @Override
    public long verify(LabUpdate update, long generation) {
        return verify(
                engines.of(update.engines().stream().map(LabUpdate.Engine::instance).toList()),
                generation);
    }

    /** Checks every byte every engine's workers hold against {@code generation}'s contents. */
    public long verifyAll(long generation) {
        return verify(engines(), generation);
    }

    public long verify(RolloutEngine engine, long generation) {
        return verify(List.of(engine), generation);
    }

    /**
     * Checks every byte the given engines' workers hold against {@code generation}'s contents (one
     * verifier: each image or shard layout is generated once, its other copies compared with it).
     */
    public long verify(List<RolloutEngine> which, long generation) {
        return engines.verify(which, generation);
    }

    /**
     * Checks what {@code engine} serves from against {@code generation}'s contents, for an engine
     * whose last update did not end UPDATED: its direct workers' serving buffers; a compat worker's
     * image is loaded only at UPDATED, so it is not among them ({@link
     * io.weightrelay.lab.rollout.ShmVerifier#verifyServing}).
     */
    public long verifyServing(RolloutEngine engine, long generation) {
        return engines.verifyServing(engine, generation);
    }

    /**
     * Waits until control-api says {@code generation} is in {@code state}, at most {@code wait};
     * returns the state it has then.
     */
    public GenerationState awaitGenerationState(
            long generation, GenerationState state, Duration wait) throws InterruptedException {
        return controlPlane.awaitGenerationState(generation, state, wait);
    }

    /**
     * Removes retired generations nobody holds, as a deployment's scheduled GC would; answers what
     * was collected and what kept.
     */
    public GcReport collectGarbageReport() {
        return controlPlane.collectGarbage();
    }

    @Override
    public void collectGarbage() {
        collectGarbageReport();
    }

    /**
     * Kills instance {@code index}'s loader as a crash would, starts a fresh one and registers the
     * engine again in a group of its own, so that it can load the active generation alone: it reads
     * the store itself, with no republish and no other instance involved.
     */
    public RolloutEngine restartInstance(int index) throws Exception {
        restartInstances(List.of(index));
        return engines.engine(index);
    }

    /**
     * {@link #restartInstance(int)} for several instances at once: their loaders are killed
     * together and the fresh ones start side by side, each engine in a group of its own.
     */
    @Override
    public List<String> restartInstances(List<Integer> indexes) throws Exception {
        List<ServiceProcess> fresh = services.replaceLoaders(indexes, "-restarted", List.of());
        List<String> out = new ArrayList<>();
        for (int i = 0; i < indexes.size(); i++) {
            int index = indexes.get(i);
            String group = "rebuild-" + slots.get(index).rolloutInstance();
            out.add(engines.replace(index, fresh.get(i).baseUrl(), group).instance());
        }
        return out;
    }

    /**
     * Registers every engine again with its own loader, in the lab's group: how an instance paused
     * for rebuild is rebuilt (a new epoch; the loader accepts updates again).
     */
    public void reRegisterAll() {
        for (int i = 0; i < slots.size(); i++) {
            reRegister(i);
        }
    }

    /**
     * Registers every engine again with its direct workers taking new generations {@code how}
     * (staged: received beside the weights they serve from, installed by a local copy), and so
     * every registration after.
     */
    @Override
    public void directInstall(DirectInstall how) {
        engines.directInstall(how);
    }

    /**
     * Whether the lab's updates serve through the fetch from now on: each engine starts its update
     * to install on request and asks to install once its group fetched (compat, or direct
     * registered staged).
     */
    @Override
    public void installOnRequest(boolean on) {
        engines.installOnRequest(on);
    }

    /**
     * Registers engine {@code index} again with its own loader, in the lab's group: {@link
     * #reRegisterAll()} for one instance, when another's loader is dead.
     */
    public void reRegister(int index) {
        engines.reRegister(index);
    }

    /**
     * Seconds the engines' first registrations took, one after another: each loader creates and
     * pre-faults its workers' receive segments before it answers, so this is the buffers' set-up,
     * paid before (and reported apart from) the first update.
     */
    public double registrationSeconds() {
        return engines.registrationSeconds();
    }

    // ---- What the lab asks control-api as an operator. ----

    /** The active generation as control-api answers it. */
    public Generation activeGeneration() {
        return controlPlane.activeGeneration();
    }

    /** The update session of {@code group} to {@code generation}, as control-api answers it. */
    public UpdateSession session(long generation, String group) {
        return controlPlane.session(generation, group);
    }

    /** Loader {@code instance}'s part of plan {@code planId}, as control-api serves it. */
    public Slice slice(String planId, String instance) {
        return controlPlane.slice(planId, instance);
    }

    /** A loader as control-api's registry answers it. */
    public Loader loader(String id) {
        return controlPlane.loader(id);
    }

    /** Makes control-api forget loader {@code id}, as an operator would (its process stays). */
    public void deregisterLoader(String id) {
        controlPlane.deregisterLoader(id);
    }

    /** A generation as control-api answers it. */
    public Generation generation(long generation) {
        return controlPlane.generation(generation);
    }

    /**
     * Where the lab's control-api lets checkpoints live ({@code relay.checkpoints.root}): the
     * system property {@code wr.lab.checkpoint-root}, else this JVM's temporary directory (a test's
     * {@code @TempDir} is inside it).
     */
    public static Path checkpointRoot() {
        return Path.of(
                        System.getProperty(
                                "wr.lab.checkpoint-root", System.getProperty("java.io.tmpdir")))
                .toAbsolutePath()
                .normalize();
    }

    /**
     * Saves a checkpoint of {@code generation} into {@code directory} through control-api (operator
     * token), which calls each publisher holding its objects with the owner credential at the admin
     * URL the publisher registered with its own owner token.
     */
    public CheckpointReport checkpoint(long generation, Path directory) {
        return controlPlane.checkpoint(generation, directory);
    }

    /**
     * Restores the checkpoint in {@code directory} through control-api (operator token): from the
     * directory alone, into whatever owners run now.
     */
    public Generation restore(Path directory) {
        return controlPlane.restore(directory);
    }

    /** Whether and where {@code generation} is saved, as operators see it. */
    public CheckpointStatus checkpointStatus(long generation) {
        return controlPlane.checkpointStatus(generation);
    }

    /** control-api at {@code baseUrls} (one, or several failed over), with the operator token. */
    private ApiClient operatorClient(String baseUrls) {
        return client(baseUrls, operatorToken);
    }

    /** control-api at {@code baseUrls} with {@code token}. */
    private static ApiClient client(String baseUrls, String token) {
        Endpoint as = Endpoint.of(baseUrls, token);
        ApiClient client = io.weightrelay.api.RelayClients.of(as).control();
        client.setBasePath(as.basePath());
        return client;
    }

    /** Every file in {@code /dev/shm} this lab's services made (their names hold the run id). */
    public List<Path> shmFiles() throws IOException {
        return LabStore.shmFiles(run);
    }

    // ---- Logs and the end. ----

    /** Prints every service's log tail to stderr (after a failure). */
    @Override
    public void dumpLogs() {
        processes.dumpLogs();
    }

    /** Stops every service, then deletes the lab's Redis keys (nothing writes them any more). */
    @Override
    public void close() {
        processes.stopAll();
        ServiceProcess.deleteTmpDirs(logs);
        LabStore.reclaimOrphanedSegmentFiles("killed during the lab");
        LabStore.deleteKeys(spec.redisUri(), args.controlPrefix());
        KilledLabs.closed(logs);
        secrets.close();
    }

    // ---- Names and credentials ----

    /** The store segment of trainer node {@code node}'s publisher in this lab. */
    public String segmentNameOf(String node) {
        return args.segmentName(node);
    }

    /** Trainer node {@code index}'s publisher's URL, while it runs. */
    public String publisherUrl(int index) {
        return services.publisher(index).baseUrl();
    }

    /** The loader token of {@code instance}, bound to it in control-api. */
    public String loaderToken(String instance) {
        return secrets.loader(instance);
    }

    // ---- What a client in another process (the Python package's tests and bench) needs. ----

    /**
     * Every service this lab runs, by name ({@code control-api}, {@code publisher-<node>}, ...).
     */
    public Map<String, String> serviceUrls() {
        return processes.urls();
    }

    public String trainerToken() {
        return secrets.trainer();
    }

    public String operatorToken() {
        return operatorToken;
    }

    /** The scrape token of every service of this lab. */
    public String metricsToken() {
        return secrets.metrics();
    }

    /**
     * Every token and secret this lab configured (role tokens, bound tokens, the owner credential,
     * the data-plane secret): none may appear in a service log.
     */
    @Override
    public List<String> configuredSecrets() {
        return secrets.all();
    }

    /** The data-plane secret every service of this lab holds (for engines the lab opens itself). */
    public byte[] dataplaneSecret() throws IOException {
        return secrets.dataplaneSecret();
    }

    /** The data-plane key prefix of this lab's store (segments and object directory). */
    public String dataplanePrefix() {
        return args.dataplanePrefix();
    }

    /**
     * How the fault suite and the tests break this lab: kills, restarts (of one service or of the
     * whole lab from scratch), one control-api instance alone, a flipped byte.
     */
    public LabFaults faults() {
        return faults;
    }
}
