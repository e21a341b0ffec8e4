package io.weightrelay.lab.cluster;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.SegmentRole;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdatePhase;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ReclaimedSegmentFile;
import io.weightrelay.lab.cli.Progress;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.lab.rollout.ShmVerifier;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.service.test.ServiceProcess;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TensorSource;
import io.weightrelay.trainer.client.TrainerSession;
import io.weightrelay.trainer.sim.DeterministicWeights;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * A whole lab on this machine: control-api, one publisher per trainer node label and one loader per
 * rollout instance, each a real service in its own JVM on loopback, with the simulated trainer and
 * rollout engines driving them from this JVM over REST and shared memory. Everything it started is
 * stopped by {@link #close()}. Not thread safe.
 */
public final class LabCluster implements StartedOrClosed.Lab {

    /**
     * How long each service may take to answer its health check: 3 minutes, or the system property
     * {@code relay.lab.healthy-seconds} (the Python tests give a loaded machine more).
     */
    private static final Duration HEALTHY =
            Duration.ofSeconds(Long.getLong("relay.lab.healthy-seconds", 180));

    /**
     * What publisher-service and loader-service run with here, as in their images: C1 only. Their
     * hot paths are native; C2 recompiling their Java control flow for dozens of updates took a
     * quarter of the two cores during a measured update and starved the copies beside it.
     */
    static final List<String> DATA_PLANE_JVM_OPTIONS = List.of("-XX:TieredStopAtLevel=1");

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

    /** One update of every listed engine, started together, and how long until the last ended. */
    public record Updates(double seconds, List<UpdateProgress> results) {

        /** {@code of} each engine's update, summed over all. */
        public long sum(ToLongFunction<UpdateProgress> of) {
            return results.stream().mapToLong(of).sum();
        }

        /** Store bytes the engines' loaders read ({@code localRead + tcpRead}), over all. */
        public long storeBytesRead() {
            return sum(p -> p.getTransport().getLocalRead() + p.getTransport().getTcpRead());
        }

        /** Bytes the engines' workers received, over all. */
        public long bytesReceived() {
            return sum(UpdateProgress::getBytesReceived);
        }

        /** Fails naming the first instance that did not end UPDATED, with its failing peer. */
        public Updates requireUpdated() {
            for (UpdateProgress p : results) {
                if (p.getOutcome() != UpdateOutcome.UPDATED) {
                    throw new IllegalStateException(
                            "update "
                                    + p.getUpdateId()
                                    + " ended "
                                    + p.getOutcome()
                                    + ": "
                                    + p.getError()
                                    + " (failing peer "
                                    + p.getFailingPeer()
                                    + ")");
                }
            }
            return this;
        }
    }

    private final Spec spec;
    private final String run = UUID.randomUUID().toString().substring(0, 8);

    /** Every credential of this run, handed to the services in files. */
    private final LabSecrets secrets;

    private final String trainerToken;
    private final String operatorToken;
    private final Path logs;
    private final Path secretFile;
    private final SourceManifest manifest;
    private final TargetPlacement placement;
    private final List<LabCatalog.LoaderSlot> slots;
    private final List<ServiceProcess> children = new ArrayList<>();
    private final List<ServiceProcess> loaders = new ArrayList<>();
    private final List<RolloutEngine> engines = new ArrayList<>();
    private double registrationSeconds;
    private ServiceProcess control;

    /** Every control-api instance, {@link #control} first; all share the lab's Redis and prefix. */
    private final List<ServiceProcess> controls = new ArrayList<>();

    private int controlApis = 1;

    /** What each control-api instance was started with, by index (a restart reuses them). */
    private final List<List<String>> controlArgs = new ArrayList<>();

    /** control-api restarts so far, to name each one's log. */
    private int restarts;

    /**
     * Each control-api instance's {@code relay.clock.skew}, by index (empty: none skewed). A lab
     * with skews spreads its clients over the instances: client k lists instance k mod n first.
     */
    private List<Duration> controlApiSkews = List.of();

    /** How many clients (publishers, loaders) were given control-api URLs so far. */
    private int clientsSpread;

    private final Map<String, ServiceProcess> publishers = new LinkedHashMap<>();
    private final Map<String, List<String>> publisherArgs = new LinkedHashMap<>();
    private TrainerSession trainer;
    private GenerationsApi operator;
    private boolean checksums = true;
    private boolean storageUnits;

    /** Every publisher's segment size, or 0: sized by {@link LabCatalog#publisherSizes}. */
    private long segmentBytes;

    /** The storage unit of each trainer node (node to process) when the lab runs them. */
    private final Map<String, ServiceProcess> units = new LinkedHashMap<>();

    /**
     * The lease a lab's loader takes when it prepares ({@code relay.loader.lease-ttl}, 2 minutes by
     * default): its heartbeats carry it while it lives, so this is how long a loader that died
     * keeps what it served from collection. Short here so that the fault suite sees that happen.
     */
    public static final Duration LOADER_LEASE_TTL = Duration.ofSeconds(20);

    private LabCluster(Spec spec) throws IOException {
        this.spec = spec;
        this.logs = Files.createTempDirectory("wr-lab-" + run);
        KilledLabs.record(logs, run, spec.redisUri());
        this.secrets = LabSecrets.create(run);
        this.trainerToken = secrets.trainer();
        this.operatorToken = secrets.operator();
        this.secretFile = secrets.dataplaneSecretFile();
        this.manifest = LabCatalog.publishedManifest(spec);
        this.placement = LabCatalog.placementFor(manifest, spec);
        this.slots = LabCatalog.loaderSlots(placement);
    }

    /** Every loader of this lab, in the order of {@link #engines()}. */
    public List<LabCatalog.LoaderSlot> loaderSlots() {
        return slots;
    }

    /**
     * Registers {@code engine} (the engine side of {@code slot}) with its loader in {@code group}.
     */
    private void register(RolloutEngine engine, LabCatalog.LoaderSlot slot, String group) {
        engine.register(
                spec.model(),
                group,
                slot.node(),
                slot.span(),
                RolloutEngine.workers(placement, slot.rolloutInstance(), slot.node(), manifest));
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
        return start(spec, checksums, controlApis, false);
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
        return start(spec, checksums, skews.size(), false, 0, List.copyOf(skews));
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
        return start(spec, true, 1, false, segmentBytes);
    }

    /**
     * A lab whose trainer nodes each run a storage unit (a publisher with {@code
     * relay.segment.role=storage-unit}, owning the node's segment under the same name) and a
     * client-only publisher beside the trainer ranks ({@code role=client}, size 0, file staging)
     * that stores into its node's unit over the local transport. Only the units own store memory,
     * so only they are called by a checkpoint save.
     */
    public static LabCluster startWithStorageUnits(Spec spec) throws Exception {
        return start(spec, true, 1, true);
    }

    private static LabCluster start(
            Spec spec, boolean checksums, int controlApis, boolean storageUnits) throws Exception {
        return start(spec, checksums, controlApis, storageUnits, 0);
    }

    private static LabCluster start(
            Spec spec, boolean checksums, int controlApis, boolean storageUnits, long segmentBytes)
            throws Exception {
        return start(spec, checksums, controlApis, storageUnits, segmentBytes, List.of());
    }

    private static LabCluster start(
            Spec spec,
            boolean checksums,
            int controlApis,
            boolean storageUnits,
            long segmentBytes,
            List<Duration> controlApiSkews)
            throws Exception {
        // Every service needs the Redis: one that does not answer would show only as services
        // that never turn healthy, after the whole health wait. Said now, in a second.
        redisBroken(spec)
                .ifPresent(
                        broken -> {
                            throw new IllegalStateException(
                                    "cannot start the lab's control-api, publishers and loaders: "
                                            + broken);
                        });
        // An earlier lab ended by SIGKILL or the OOM killer must not leave this one short of
        // shared memory; every service's data plane would reclaim too, but later and unseen.
        reclaimOrphanedSegmentFiles("left by killed processes");
        for (String run : KilledLabs.sweep(tmpDir(), spec.redisUri())) {
            System.err.println("lab: deleted the Redis keys of lab run " + run + " (killed)");
        }
        LabCluster lab = new LabCluster(spec);
        lab.checksums = checksums;
        lab.controlApis = controlApis;
        lab.storageUnits = storageUnits;
        lab.segmentBytes = segmentBytes;
        lab.controlApiSkews = controlApiSkews;
        return StartedOrClosed.start(lab, lab::startServices);
    }

    public SourceManifest manifest() {
        return manifest;
    }

    public TargetPlacement placement() {
        return placement;
    }

    public List<RolloutEngine> engines() {
        return List.copyOf(engines);
    }

    public String controlUrl() {
        return control.baseUrl();
    }

    /**
     * Every control-api instance's URL, comma-separated, as the services and the trainer are given
     * them (one URL when the lab runs one instance).
     */
    public String controlUrls() {
        return String.join(",", controls.stream().map(ServiceProcess::baseUrl).toList());
    }

    /**
     * The control-api URLs the next client started is given: {@link #controlUrls()}, or in a lab of
     * skewed instances the list rotated so that clients take turns at which instance they list
     * first.
     */
    private String controlUrlsForNextClient() {
        if (controlApiSkews.isEmpty()) {
            return controlUrls();
        }
        List<String> urls =
                new ArrayList<>(controls.stream().map(ServiceProcess::baseUrl).toList());
        java.util.Collections.rotate(urls, -(clientsSpread++ % urls.size()));
        return String.join(",", urls);
    }

    /** How many control-api instances this lab started. */
    public int controlApiCount() {
        return controls.size();
    }

    /** control-api instance {@code index} alone (no failover), with the operator token. */
    public GenerationsApi controlApi(int index) {
        return new GenerationsApi(operatorClient(controls.get(index).baseUrl()));
    }

    /**
     * control-api instance {@code index} alone (no failover), with loader {@code instance}'s token
     * (bound to it: leases in its name only).
     */
    public GenerationsApi controlApiAsLoader(int index, String instance) {
        return new GenerationsApi(client(controls.get(index).baseUrl(), loaderToken(instance)));
    }

    /**
     * Kills control-api instance {@code index} with SIGKILL, as a crash would, and leaves it dead;
     * the others keep serving from the same Redis.
     */
    public void killControlApi(int index) {
        ServiceProcess victim = controls.get(index);
        victim.kill();
        children.remove(victim);
    }

    /**
     * Starts control-api instance {@code index}, which {@link #killControlApi(int)} killed, again
     * on the same port with the same settings (its clients were given that URL and are told
     * nothing), and returns once it answers its health check. Its log is {@code
     * control-api-restarted-<n>.log}.
     */
    public void startControlApiAgain(int index) throws InterruptedException {
        ServiceProcess dead = controls.get(index);
        ServiceProcess fresh =
                ServiceProcess.restart(
                        dead,
                        "control-api-restarted-" + restarts++,
                        ServiceProcess.findJar(spec.site().root(), "control-api"),
                        "512m",
                        List.of(),
                        controlArgs.get(index),
                        logs);
        children.add(fresh);
        controls.set(index, fresh);
        if (index == 0) {
            control = fresh;
        }
        awaitHealthy(List.of(fresh));
    }

    /** control-api's Redis key prefix in this lab (sessions, generations, the registry). */
    public String controlPrefix() {
        return "wr:lab:" + run + ":";
    }

    /** The lab's spec (its Redis, model and shape). */
    public Spec spec() {
        return spec;
    }

    public Path logs() {
        return logs;
    }

    /** The simulated trainer publishes the generation of {@code step}; returns its id. */
    public long publish(long step) {
        try (Progress progress = Progress.of("publish", manifest.totalBytes())) {
            return trainer.publish(
                            manifest,
                            step,
                            g -> counted(new DeterministicWeights(spec.seed(), g), progress))
                    .generation();
        }
    }

    /**
     * {@code source}, counting into {@code progress} the bytes the trainer's ranks take from it.
     */
    private static TensorSource counted(TensorSource source, Progress progress) {
        return new TensorSource() {
            @Override
            public void write(
                    int tensorIndex, TensorSpec tensor, long tensorOffset, ByteBuffer target) {
                int bytes = target.remaining();
                source.write(tensorIndex, tensor, tensorOffset, target);
                progress.add(bytes);
            }

            @Override
            public void skip(int tensorIndex, TensorSpec tensor) {
                source.skip(tensorIndex, tensor);
            }
        };
    }

    /**
     * The operating-system ids of the lab's services by role ({@code control-api}, {@code
     * publishers}, {@code loaders}, and {@code storage-units} where it runs them), as they run now.
     */
    public Map<String, List<Long>> servicePids() {
        Map<String, List<Long>> out = new LinkedHashMap<>();
        out.put("control-api", controls.stream().map(ServiceProcess::pid).toList());
        out.put("publishers", publishers.values().stream().map(ServiceProcess::pid).toList());
        out.put("loaders", loaders.stream().map(ServiceProcess::pid).toList());
        if (!units.isEmpty()) {
            out.put("storage-units", units.values().stream().map(ServiceProcess::pid).toList());
        }
        return out;
    }

    /** Updates every engine to the active generation, all at once. */
    public Updates updateAll() throws Exception {
        return update(engines);
    }

    /** Checks every byte every engine's workers hold against {@code generation}'s contents. */
    public long verifyAll(long generation) {
        return verify(engines, generation);
    }

    public long verify(RolloutEngine engine, long generation) {
        return verify(List.of(engine), generation);
    }

    /**
     * Checks every byte the given engines' workers hold against {@code generation}'s contents (one
     * verifier: each image or shard layout is generated once, its other copies compared with it).
     */
    public long verify(List<RolloutEngine> which, long generation) {
        ShmVerifier verifier = new ShmVerifier(manifest, spec.seed(), generation);
        long verified = 0;
        for (RolloutEngine engine : which) {
            verified += verifier.verify(engine.status());
        }
        return verified;
    }

    /**
     * Waits until control-api says {@code generation} is in {@code state}, at most {@code wait};
     * returns the state it has then.
     */
    public GenerationState awaitGenerationState(
            long generation, GenerationState state, Duration wait) throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            GenerationState now = operator.getGeneration(spec.model(), generation).getState();
            if (now == state || System.nanoTime() > deadline) {
                return now;
            }
            Thread.sleep(100);
        }
    }

    /**
     * Removes retired generations nobody holds, as a deployment's scheduled GC would; answers what
     * was collected and what kept.
     */
    public io.weightrelay.api.control.client.model.GcReport collectGarbage() {
        return operator.collectGarbage(spec.model());
    }

    /**
     * Kills instance {@code index}'s loader as a crash would, starts a fresh one and registers the
     * engine again in a group of its own, so that it can load the active generation alone: it reads
     * the store itself, with no republish and no other instance involved.
     */
    public RolloutEngine restartInstance(int index) throws Exception {
        return restartInstances(List.of(index)).get(0);
    }

    /**
     * {@link #restartInstance(int)} for several instances at once: their loaders are killed
     * together and the fresh ones start side by side, each engine in a group of its own.
     */
    public List<RolloutEngine> restartInstances(List<Integer> indexes) throws Exception {
        List<ServiceProcess> fresh = new ArrayList<>();
        for (int index : indexes) {
            ServiceProcess old = loaders.get(index);
            old.kill();
            children.remove(old);
            String id = slots.get(index).id();
            fresh.add(startLoader(id + "-restarted", id));
        }
        List<RolloutEngine> out = new ArrayList<>();
        for (int i = 0; i < indexes.size(); i++) {
            int index = indexes.get(i);
            LabCatalog.LoaderSlot slot = slots.get(index);
            String id = slot.id();
            awaitHealthy(List.of(fresh.get(i)));
            loaders.set(index, fresh.get(i));
            RolloutEngine engine = new RolloutEngine(id, fresh.get(i).baseUrl(), loaderToken(id));
            register(engine, slot, "rebuild-" + slot.rolloutInstance());
            engines.set(index, engine);
            out.add(engine);
        }
        return out;
    }

    /**
     * Registers every engine again with its own loader, in the lab's group: how an instance paused
     * for rebuild is rebuilt (a new epoch; the loader accepts updates again).
     */
    public void reRegisterAll() {
        for (int i = 0; i < engines.size(); i++) {
            reRegister(i);
        }
    }

    /**
     * Registers engine {@code index} again with its own loader, in the lab's group: {@link
     * #reRegisterAll()} for one instance, when another's loader is dead.
     */
    public void reRegister(int index) {
        register(engines.get(index), slots.get(index), "lab");
    }

    /** The active generation as control-api answers it. */
    public io.weightrelay.api.control.client.model.Generation activeGeneration() {
        return operator.getActiveGeneration(spec.model());
    }

    /** The update session of {@code group} to {@code generation}, as control-api answers it. */
    public io.weightrelay.api.control.client.model.UpdateSession session(
            long generation, String group) {
        return new io.weightrelay.api.control.client.UpdatesApi(operator.getApiClient())
                .getUpdateSession(spec.model(), generation, group);
    }

    /** Loader {@code instance}'s part of plan {@code planId}, as control-api serves it. */
    public Slice slice(String planId, String instance) {
        byte[] body =
                new io.weightrelay.api.control.client.PlansApi(operator.getApiClient())
                        .getPlanSliceWithResponseSpec(planId, instance)
                        .toEntity(byte[].class)
                        .getBody();
        return Slice.decode(body);
    }

    /** A loader as control-api's registry answers it. */
    public io.weightrelay.api.control.client.model.Loader loader(String id) {
        return new io.weightrelay.api.control.client.RegistryApi(operator.getApiClient())
                .getLoader(id);
    }

    /** Makes control-api forget loader {@code id}, as an operator would (its process stays). */
    public void deregisterLoader(String id) {
        new io.weightrelay.api.control.client.RegistryApi(operator.getApiClient())
                .deregisterLoader(id);
    }

    /** A generation as control-api answers it. */
    public io.weightrelay.api.control.client.model.Generation generation(long generation) {
        return operator.getGeneration(spec.model(), generation);
    }

    /**
     * Flips one byte of a stored object right in its segment's shared-memory file, as a bad DIMM or
     * a stray write would: the object directory and the checksum registered at publish stay as they
     * were. Returns the segment file written.
     *
     * @param key the object's store key ({@code model/generation/fragment})
     * @param objectOffset the byte of the object to flip
     */
    public Path corruptStoredByte(String key, long objectOffset) throws IOException {
        String prefix = dataplanePrefix();
        String replicas;
        String shm;
        RedisClient client = RedisClient.create(spec.redisUri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            replicas = redis.hget(prefix + "obj:" + key, "replicas");
            if (replicas == null) {
                throw new IllegalStateException("object " + key + " is not in the store");
            }
            String first = replicas.split(";")[0];
            String segment = first.substring(0, first.lastIndexOf('@'));
            long offset = Long.parseLong(first.substring(first.lastIndexOf('@') + 1));
            shm = redis.hget(prefix + "seg:" + segment, "shm");
            if (shm == null) {
                throw new IllegalStateException("segment " + segment + " has no descriptor");
            }
            Path file = Path.of(shm);
            try (java.nio.channels.FileChannel ch =
                    java.nio.channels.FileChannel.open(
                            file,
                            java.nio.file.StandardOpenOption.READ,
                            java.nio.file.StandardOpenOption.WRITE)) {
                java.nio.ByteBuffer one = java.nio.ByteBuffer.allocate(1);
                long at = offset + objectOffset;
                if (ch.read(one, at) != 1) {
                    throw new IOException("cannot read byte " + at + " of " + file);
                }
                one.put(0, (byte) (one.get(0) ^ 0x5a));
                one.rewind();
                if (ch.write(one, at) != 1) {
                    throw new IOException("cannot write byte " + at + " of " + file);
                }
            }
            return file;
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    /** Updates the given engines together (for example one restarted instance). */
    public Updates update(List<RolloutEngine> which) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(which.size());
        // Each engine's last answer; the progress shown is their sum.
        Map<String, UpdateProgress> latest = new ConcurrentHashMap<>();
        try (Progress progress =
                Progress.of(which.size() == 1 ? "update" : "update x" + which.size(), 0)) {
            long started = System.nanoTime();
            List<Future<UpdateProgress>> futures = new ArrayList<>();
            for (RolloutEngine e : which) {
                futures.add(
                        pool.submit(
                                () ->
                                        e.await(
                                                e.start(null, Duration.ofMinutes(10)).getUpdateId(),
                                                Duration.ofMillis(250),
                                                p -> tally(latest, e.instance(), p, progress))));
            }
            List<UpdateProgress> results = new ArrayList<>();
            for (Future<UpdateProgress> f : futures) {
                results.add(f.get());
            }
            return new Updates((System.nanoTime() - started) / 1e9, results);
        } finally {
            pool.shutdownNow();
        }
    }

    /** Records {@code instance}'s last answer and shows the sum over every engine's. */
    private static void tally(
            Map<String, UpdateProgress> latest,
            String instance,
            UpdateProgress answer,
            Progress progress) {
        latest.put(instance, answer);
        long done = 0;
        long total = 0;
        SortedSet<UpdatePhase> phases = new TreeSet<>();
        for (UpdateProgress p : latest.values()) {
            done += p.getBytesDone();
            total += p.getBytesTotal();
            phases.add(p.getPhase());
        }
        progress.set(done, total);
        progress.phase(
                String.join(
                        "/",
                        phases.stream().map(p -> p.getValue().toLowerCase(Locale.ROOT)).toList()));
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
    public io.weightrelay.api.control.client.model.CheckpointReport checkpoint(
            long generation, Path directory) {
        ApiClient client = operatorClient(control.baseUrl());
        return new io.weightrelay.api.control.client.CheckpointsApi(client)
                .saveCheckpoint(
                        spec.model(),
                        generation,
                        new io.weightrelay.api.control.client.model.CheckpointRequest()
                                .directory(directory.toString()));
    }

    // ---- Checkpoints across a full restart (issue 17). ----

    /**
     * Restores the checkpoint in {@code directory} through control-api (operator token): from the
     * directory alone, into whatever owners run now.
     */
    public io.weightrelay.api.control.client.model.Generation restore(Path directory) {
        return checkpointsApi()
                .restoreCheckpoint(
                        spec.model(),
                        new io.weightrelay.api.control.client.model.RestoreRequest()
                                .directory(directory.toString()));
    }

    /** Whether and where {@code generation} is saved, as operators see it. */
    public io.weightrelay.api.control.client.model.CheckpointStatus checkpointStatus(
            long generation) {
        return checkpointsApi().getCheckpointStatus(spec.model(), generation);
    }

    private io.weightrelay.api.control.client.CheckpointsApi checkpointsApi() {
        ApiClient client = operatorClient(control.baseUrl());
        return new io.weightrelay.api.control.client.CheckpointsApi(client);
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

    /** The process id of instance {@code index}'s loader (to freeze it with SIGSTOP). */
    public long loaderProcessId(int index) {
        return loaders.get(index).pid();
    }

    /**
     * The process id of trainer node {@code index}'s storage unit (a lab started {@link
     * #startWithStorageUnits}).
     */
    public long storageUnitProcessId(int index) {
        return units.get(Topology.trainerNodeName(index)).pid();
    }

    /**
     * The process id of trainer node {@code index}'s publisher (the client-only one in a lab of
     * storage units).
     */
    public long publisherProcessId(int index) {
        return publishers.get(Topology.trainerNodeName(index)).pid();
    }

    /**
     * Removes the segment files in {@code /dev/shm} whose owner process is gone (whichever run or
     * lab made them; never a live process's) and says so on stderr, with {@code why}.
     */
    static void reclaimOrphanedSegmentFiles(String why) {
        List<ReclaimedSegmentFile> reclaimed =
                Dataplane.reclaimOrphanedSegmentFiles(Path.of("/dev/shm"));
        if (!reclaimed.isEmpty()) {
            long bytes = reclaimed.stream().mapToLong(ReclaimedSegmentFile::bytes).sum();
            System.err.printf(
                    Locale.ROOT,
                    "lab: reclaimed %d segment file(s), %.1f MiB of /dev/shm, %s%n",
                    reclaimed.size(),
                    bytes / (double) (1 << 20),
                    why);
        }
    }

    /** Every file in {@code /dev/shm} this lab's services made (their names hold the run id). */
    public List<Path> shmFiles() throws IOException {
        try (var files = Files.list(Path.of("/dev/shm"))) {
            return files.filter(f -> f.getFileName().toString().contains(run)).toList();
        }
    }

    /**
     * A full restart with nothing surviving but files on disk: stops every service, deletes every
     * Redis key of this lab's run (control plane and store directory, only {@code wr:lab:<run>:}),
     * removes every shared-memory file the lab's services made, then starts fresh services with the
     * same settings and registers the engines again. The fresh control-api knows no generation; the
     * fresh publishers own empty segments.
     */
    public void restartFromScratch() throws Exception {
        restartFromScratch(() -> null);
    }

    /**
     * As {@link #restartFromScratch()}, calling {@code whileDown} once every service has stopped
     * and Redis and shared memory are wiped, before anything starts again.
     */
    public void restartFromScratch(java.util.concurrent.Callable<?> whileDown) throws Exception {
        for (ServiceProcess c : children) {
            c.close();
        }
        children.clear();
        loaders.clear();
        engines.clear();
        publishers.clear();
        units.clear();
        publisherArgs.clear();
        deleteKeys(spec.redisUri(), "wr:lab:" + run + ":");
        for (Path f : shmFiles()) {
            Files.deleteIfExists(f);
        }
        whileDown.call();
        showingLogsOnFailure(this::startServices);
    }

    /** Prints every service's log tail to stderr (after a failure). */
    public void dumpLogs() {
        for (ServiceProcess c : children) {
            System.err.println("---- " + c.name() + " ----\n" + c.tail());
        }
    }

    /** Stops every service, then deletes the lab's Redis keys (nothing writes them any more). */
    @Override
    public void close() {
        for (ServiceProcess c : children) {
            c.close();
        }
        children.clear();
        ServiceProcess.deleteTmpDirs(logs);
        reclaimOrphanedSegmentFiles("killed during the lab");
        deleteKeys(spec.redisUri(), "wr:lab:" + run + ":");
        KilledLabs.closed(logs);
        secrets.close();
    }

    /** Where the labs' log directories are made. */
    private static Path tmpDir() {
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    /**
     * Deletes every key under {@code prefix} (SCAN MATCH {@code prefix*}, UNLINK a page at a time):
     * a lab's or a benchmark's own run prefix, never a wider one, since other runs share the Redis.
     * A failure is reported on stderr, not thrown.
     */
    public static void deleteKeys(String redisUri, String prefix) {
        RedisClient client = RedisClient.create(redisUri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            ScanArgs match =
                    ScanArgs.Builder.matches(prefix.replaceAll("([*?\\[\\]\\\\])", "\\\\$1") + "*")
                            .limit(1000);
            KeyScanCursor<String> page = redis.scan(match);
            while (true) {
                if (!page.getKeys().isEmpty()) {
                    redis.unlink(page.getKeys().toArray(String[]::new));
                }
                if (page.isFinished()) {
                    break;
                }
                page = redis.scan(page, match);
            }
        } catch (RedisException e) {
            // Runs in close() and finally blocks: never hide the run's own outcome behind it.
            System.err.println("could not delete the Redis keys under " + prefix + ": " + e);
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    private void startServices() throws Exception {
        String dpPrefix = dataplanePrefix();
        String controlSecrets = secretsArg("control-api", controlApiSecrets());
        // A restart from scratch starts them all again: only the new ones are the lab's.
        controls.clear();
        controlArgs.clear();
        for (int i = 0; i < controlApis; i++) {
            List<String> args =
                    List.of(
                            "--spring.data.redis.host=" + spec.site().redisHost(),
                            "--spring.data.redis.port=" + spec.site().redisPort(),
                            "--relay.redis.key-prefix=wr:lab:" + run + ":",
                            "--relay.dataplane.key-prefix=" + dpPrefix,
                            "--relay.dataplane.secret-file="
                                    + secrets.dataplaneKeysFile(
                                            LabSecrets.DataplaneDuty.CONTROL_API),
                            "--relay.generations.scheduled-gc=false",
                            "--relay.updates.verify-checksums=" + checksums,
                            "--relay.checkpoints.root=" + checkpointRoot(),
                            "--relay.clock.skew="
                                    + (i < controlApiSkews.size()
                                            ? controlApiSkews.get(i)
                                            : Duration.ZERO),
                            controlSecrets);
            controlArgs.add(args);
            controls.add(
                    startService(
                            i == 0 ? "control-api" : "control-api-" + i,
                            "control-api",
                            "512m",
                            args));
        }
        control = controls.get(0);
        if (storageUnits) {
            // The units first, registered with control-api, so each client-only publisher knows
            // the unit of its node from its first put on.
            awaitHealthy(List.of(control));
            startStorageUnits(dpPrefix);
            awaitHealthy(units.values());
            awaitSegmentsRegistered(SegmentRole.STORAGE_UNIT, units.size());
        }
        startPublishers(dpPrefix);
        for (LabCatalog.LoaderSlot slot : slots) {
            loaders.add(startLoader(slot.id(), slot.id()));
        }
        awaitHealthy(children);
        if (!storageUnits) {
            // A publisher registers its segment once it is ready, on its heartbeat's first beat:
            // healthy is not yet registered, and a save or restore needs every owner registered.
            awaitSegmentsRegistered(SegmentRole.TRAINER, publishers.size());
        }

        operator = new GenerationsApi(operatorClient(controlUrls()));

        connectTrainer();

        long started = System.nanoTime();
        for (int i = 0; i < slots.size(); i++) {
            String id = slots.get(i).id();
            RolloutEngine engine = new RolloutEngine(id, loaders.get(i).baseUrl(), loaderToken(id));
            register(engine, slots.get(i), "lab");
            engines.add(engine);
        }
        registrationSeconds = (System.nanoTime() - started) / 1e9;
    }

    /**
     * Waits until {@code services} are healthy, all watched at once: one that exits early, or the
     * lab's Redis not answering, fails the wait within seconds and names them ({@link
     * ServiceProcess#awaitHealthy(java.util.Collection, Duration, ServiceProcess.Dependencies)}).
     */
    private void awaitHealthy(java.util.Collection<ServiceProcess> services)
            throws InterruptedException {
        ServiceProcess.awaitHealthy(services, HEALTHY, () -> redisBroken(spec));
    }

    /** Empty while the lab's Redis answers PING, else a sentence naming it. */
    static java.util.Optional<String> redisBroken(Spec spec) {
        Site site = spec.site();
        if (LabRedis.answersPing(site.redisHost(), site.redisPort())) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(
                "the lab's Redis at "
                        + spec.redisUri()
                        + " does not answer (./relay starts one of its own when it has to; see "
                        + RunRedis.ENV
                        + ")");
    }

    /**
     * Seconds the engines' first registrations took, one after another: each loader creates and
     * pre-faults its workers' receive segments before it answers, so this is the buffers' set-up,
     * paid before (and reported apart from) the first update.
     */
    public double registrationSeconds() {
        return registrationSeconds;
    }

    /** The simulated trainer's session, over the publishers running now. */
    private void connectTrainer() {
        Map<String, PublisherClient> clients = new LinkedHashMap<>();
        publishers.forEach(
                (node, p) ->
                        clients.put(
                                node,
                                PublisherClient.connect(
                                        p.baseUrl(), trainerToken, Duration.ofMinutes(5))));
        trainer =
                new TrainerSession(
                        new RestCoordinator(
                                controlUrls(),
                                trainerToken,
                                Duration.ofMinutes(2),
                                LabCatalog.MAX_FRAGMENT),
                        clients,
                        new RankPublisher.Options(2, true, Duration.ofMinutes(2)));
    }

    /**
     * Kills trainer node {@code index}'s publisher as a crash would and starts it again with the
     * same settings: same node and segment name, new HTTP and data-plane ports (the simulated
     * trainer is pointed at the new HTTP one). What the killed process stored is gone with it; the
     * new one purges its directory entries before storing anything.
     */
    public void restartPublisher(int index) throws Exception {
        String node = Topology.trainerNodeName(index);
        ServiceProcess old = publishers.get(node);
        old.kill();
        children.remove(old);
        startPublisherAgain(node, "publisher-" + node + "-restarted");
    }

    /**
     * Starts node {@code node}'s publisher with the settings it first had, and connects the
     * trainer.
     */
    private void startPublisherAgain(String node, String name) throws InterruptedException {
        ServiceProcess fresh =
                startService(name, "publisher-service", "384m", publisherArgs.get(node));
        awaitHealthy(List.of(fresh));
        publishers.put(node, fresh);
        connectTrainer();
    }

    /**
     * Kills trainer node {@code index}'s publisher as a crash would and leaves it dead: its segment
     * descriptor and directory entries stay in Redis, its engine answers no more.
     *
     * @return the name of its segment
     */
    public String killPublisher(int index) {
        String node = Topology.trainerNodeName(index);
        ServiceProcess old = publishers.remove(node);
        old.kill();
        children.remove(old);
        // a killed owner leaves its segment's file: reclaimed when the lab closes (or when the
        // next data plane opens on this host)
        return segmentName(node);
    }

    /**
     * One storage unit per trainer node: the node's segment (named as a trainer-side publisher's
     * would be, so owner tokens and {@link #segmentNameOf} stay the same), serving no trainer.
     */
    private void startStorageUnits(String dpPrefix) {
        long segment = LabCatalog.publisherSizes(manifest, spec.trainerNodes())[0];
        for (int i = 0; i < spec.trainerNodes(); i++) {
            String node = Topology.trainerNodeName(i);
            String segmentName = segmentName(node);
            List<String> args =
                    List.of(
                            "--relay.segment.node=" + node,
                            "--relay.segment.name=" + segmentName,
                            "--relay.segment.size=" + segment + "B",
                            "--relay.segment.role=storage-unit",
                            "--relay.dataplane.redis-uri=" + spec.redisUri(),
                            "--relay.dataplane.key-prefix=" + dpPrefix,
                            "--relay.dataplane.secret-file="
                                    + secrets.dataplaneKeysFile(
                                            LabSecrets.DataplaneDuty.STORE_OWNER),
                            "--relay.staging.mode=segment",
                            "--relay.staging.capacity=" + LabCatalog.MAX_BATCH + "B",
                            "--relay.staging.max-batch-bytes=" + LabCatalog.MAX_BATCH + "B",
                            "--relay.publish.control-api-url=" + controlUrls(),
                            secretsArg("unit-" + node, secrets.publisher(segmentName)));
            units.put(node, startService("unit-" + node, "publisher-service", "384m", args));
        }
    }

    /** Waits until {@code expected} segments of {@code role} are registered and alive. */
    private void awaitSegmentsRegistered(SegmentRole role, int expected)
            throws InterruptedException {
        ApiClient client = operatorClient(control.baseUrl());
        io.weightrelay.api.control.client.RegistryApi registry =
                new io.weightrelay.api.control.client.RegistryApi(client);
        long deadline = System.nanoTime() + HEALTHY.toNanos();
        while (true) {
            long alive =
                    registry.listSegments().stream()
                            .filter(s -> Boolean.TRUE.equals(s.getAlive()) && s.getRole() == role)
                            .count();
            if (alive >= expected) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        alive
                                + " of "
                                + expected
                                + " "
                                + role
                                + " segments registered within "
                                + HEALTHY);
            }
            Thread.sleep(50);
        }
    }

    private void startPublishers(String dpPrefix) {
        long[] sizes = LabCatalog.publisherSizes(manifest, spec.trainerNodes());
        long segment = segmentBytes > 0 ? segmentBytes : sizes[0];
        long staging = sizes[1];
        for (int i = 0; i < spec.trainerNodes(); i++) {
            String node = Topology.trainerNodeName(i);
            String segmentName = segmentName(node);
            Map<String, String> secretProperties = new LinkedHashMap<>();
            secretProperties.putAll(secrets.publisher(segmentName));
            List<String> placementArgs =
                    storageUnits
                            ? List.of(
                                    // client-only: no store memory, staging in a file of its own
                                    "--relay.segment.name=" + segmentName + "-client",
                                    "--relay.segment.size=0B",
                                    "--relay.segment.role=client",
                                    "--relay.staging.mode=file",
                                    "--relay.staging.path=/dev/shm/wr-lab-staging-"
                                            + run
                                            + "-"
                                            + node)
                            : List.of(
                                    "--relay.segment.name=" + segmentName,
                                    "--relay.segment.size=" + segment + "B",
                                    "--relay.staging.mode=segment");
            List<String> args = new ArrayList<>();
            args.add("--relay.segment.node=" + node);
            args.addAll(placementArgs);
            args.addAll(
                    List.of(
                            "--relay.dataplane.redis-uri=" + spec.redisUri(),
                            "--relay.dataplane.key-prefix=" + dpPrefix,
                            "--relay.dataplane.secret-file="
                                    + secrets.dataplaneKeysFile(
                                            storageUnits
                                                    ? LabSecrets.DataplaneDuty.STORER
                                                    : LabSecrets.DataplaneDuty.STORE_OWNER),
                            "--relay.staging.capacity=" + staging + "B",
                            "--relay.staging.max-batch-bytes=" + LabCatalog.MAX_BATCH + "B",
                            "--relay.publish.control-api-url=" + controlUrlsForNextClient(),
                            secretsArg("publisher-" + node, secretProperties)));
            publisherArgs.put(node, args);
            publishers.put(
                    node, startService("publisher-" + node, "publisher-service", "384m", args));
        }
    }

    private ServiceProcess startLoader(String name, String instance) {
        return startLoader(name, instance, List.of());
    }

    private ServiceProcess startLoader(String name, String instance, List<String> extraArgs) {
        Map<String, String> secretProperties = new LinkedHashMap<>();
        secretProperties.putAll(secrets.loaderService(instance));
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--relay.loader.control-url=" + controlUrlsForNextClient(),
                                "--relay.dataplane.redis-uri=" + spec.redisUri(),
                                "--relay.dataplane.key-prefix=" + dataplanePrefix(),
                                "--relay.dataplane.secret-file="
                                        + secrets.dataplaneKeysFile(
                                                LabSecrets.DataplaneDuty.LOADER),
                                "--relay.loader.checksums=" + checksums,
                                "--relay.loader.lease-ttl=" + LOADER_LEASE_TTL.toSeconds() + "s",
                                secretsArg("loader-" + name, secretProperties)));
        // The loader's node is known before its engine registers: it opens its data plane as it
        // starts, not inside the registration (a deployment sets it the same way).
        for (LabCatalog.LoaderSlot slot : slots) {
            if (slot.id().equals(instance)) {
                args.add("--relay.dataplane.node-label=" + slot.node());
            }
        }
        args.addAll(extraArgs);
        return startService("loader-" + name, "loader-service", "384m", args);
    }

    /**
     * Kills instance {@code index}'s loader, starts a fresh one with {@code extraArgs} added (a
     * lab-only fault setting, say) and registers the engine again in the lab's group.
     */
    public RolloutEngine restartLoader(int index, List<String> extraArgs) throws Exception {
        ServiceProcess old = loaders.get(index);
        old.kill();
        children.remove(old);
        LabCatalog.LoaderSlot slot = slots.get(index);
        String id = slot.id();
        ServiceProcess fresh = startLoader(id + "-" + System.nanoTime(), id, extraArgs);
        awaitHealthy(List.of(fresh));
        loaders.set(index, fresh);
        RolloutEngine engine = new RolloutEngine(id, fresh.baseUrl(), loaderToken(id));
        register(engine, slot, "lab");
        engines.set(index, engine);
        return engine;
    }

    private String segmentName(String node) {
        return "lab-" + run + "-" + node;
    }

    /** The store segment of trainer node {@code node}'s publisher in this lab. */
    public String segmentNameOf(String node) {
        return segmentName(node);
    }

    /** The loader token of {@code instance}, bound to it in control-api. */
    public String loaderToken(String instance) {
        return secrets.loader(instance);
    }

    /**
     * control-api's credentials: trainer and operator tokens, each instance's loader token bound to
     * that instance, each publisher's owner token bound to its segment, and the owner credential it
     * presents to the publishers.
     */
    private Map<String, String> controlApiSecrets() {
        List<String> segments = new ArrayList<>();
        for (int i = 0; i < spec.trainerNodes(); i++) {
            segments.add(segmentName(Topology.trainerNodeName(i)));
        }
        return secrets.controlApi(slots.stream().map(LabCatalog.LoaderSlot::id).toList(), segments);
    }

    /**
     * Writes {@code properties} to a file only this user can read and returns the argument that
     * makes the service read it: secrets never appear on a command line.
     */
    private String secretsArg(String service, Map<String, String> properties) {
        return secrets.springArg(service, properties);
    }

    /**
     * Every token and secret this lab configured (role tokens, bound tokens, the owner credential,
     * the data-plane secret): none may appear in a service log.
     */
    public List<String> configuredSecrets() {
        return secrets.all();
    }

    /** The data-plane secret every service of this lab holds (for engines the lab opens itself). */
    public byte[] dataplaneSecret() throws IOException {
        return secrets.dataplaneSecret();
    }

    /** The data-plane key prefix of this lab's store (segments and object directory). */
    public String dataplanePrefix() {
        return "wr:lab:" + run + ":dp:";
    }

    /**
     * Starts {@code module}'s service from the checkout's jar with the JVM options its image runs
     * with ({@link #DATA_PLANE_JVM_OPTIONS} for the data-plane services); {@link #close()} stops
     * it.
     */
    private ServiceProcess startService(
            String name, String module, String heap, List<String> args) {
        ServiceProcess process =
                ServiceProcess.start(
                        name,
                        ServiceProcess.findJar(spec.site().root(), module),
                        heap,
                        module.equals("control-api") ? List.of() : DATA_PLANE_JVM_OPTIONS,
                        args,
                        logs);
        children.add(process);
        return process;
    }

    // ---- What a client in another process (the Python package's tests and bench) needs. ----

    /**
     * Every service this lab runs, by name ({@code control-api}, {@code publisher-<node>}, ...).
     */
    public Map<String, String> serviceUrls() {
        Map<String, String> out = new LinkedHashMap<>();
        children.forEach(c -> out.put(c.name(), c.baseUrl()));
        return out;
    }

    public String trainerToken() {
        return trainerToken;
    }

    public String operatorToken() {
        return operatorToken;
    }

    /** The scrape token of every service of this lab. */
    public String metricsToken() {
        return secrets.metrics();
    }

    // ---- What the fault suite needs (io.weightrelay.lab.faults). ----

    /**
     * The simulated trainer publishes the generation of {@code step} with its bytes passed through
     * {@code wrap}: a fault case wraps the generator to hold the ranks mid-publish while it kills a
     * process (a hook of the lab's trainer, none in the services).
     */
    public long publish(long step, java.util.function.UnaryOperator<TensorSource> wrap) {
        return trainer.publish(
                        manifest, step, g -> wrap.apply(new DeterministicWeights(spec.seed(), g)))
                .generation();
    }

    /** Trainer node {@code index}'s publisher's segment (its owner's name in the registry). */
    public String publisherSegment(int index) {
        return segmentName(Topology.trainerNodeName(index));
    }

    /** Trainer node {@code index}'s publisher's URL, while it runs. */
    public String publisherUrl(int index) {
        return publishers.get(Topology.trainerNodeName(index)).baseUrl();
    }

    /**
     * Starts trainer node {@code index}'s publisher again after {@link #killPublisher(int)} left it
     * dead: same node and segment name, as an operator's restart would (it re-creates the segment,
     * so what the dead one stored is reported lost).
     */
    public void revivePublisher(int index) throws Exception {
        String node = Topology.trainerNodeName(index);
        if (publishers.containsKey(node)) {
            throw new IllegalStateException("the publisher of " + node + " is running");
        }
        startPublisherAgain(node, "publisher-" + node + "-revived-" + System.nanoTime());
    }

    /** The process id of instance {@code index}'s loader (to signal it). */
    public long loaderPid(int index) {
        return loaders.get(index).pid();
    }

    /** Kills instance {@code index}'s loader at once (SIGKILL) and leaves it dead. */
    public void killLoader(int index) {
        loaders.get(index).kill();
    }

    /** How many store objects of {@code generation} the object directory still lists. */
    public long storedObjects(long generation) {
        String match =
                (dataplanePrefix() + "obj:" + spec.model() + "/" + generation + "/")
                                .replaceAll("([*?\\[\\]\\\\])", "\\\\$1")
                        + "*";
        RedisClient client = RedisClient.create(spec.redisUri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            ScanArgs args = ScanArgs.Builder.matches(match).limit(1000);
            long n = 0;
            KeyScanCursor<String> page = redis.scan(args);
            while (true) {
                n += page.getKeys().size();
                if (page.isFinished()) {
                    return n;
                }
                page = redis.scan(page, args);
            }
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }
}
