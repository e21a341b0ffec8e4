package io.weightrelay.lab.bench;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.cluster.Cluster;
import io.weightrelay.lab.cluster.LabCatalog;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.cluster.MooncakeServices;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.topology.Topology;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * {@code ./relay bench update --model qwen2.5-0.5b --instances 4 --tp 2 --mode compat|direct}:
 * control-api, one publisher-service per trainer node (two node labels) and one loader-service per
 * engine instance (two rollout node labels, instances packed in order) as child JVMs, with their
 * images' JVM flags (publishers and loaders C1 only; docs/deploy.md, "JVM flags"); the simulated
 * trainer publishes, the simulated engines register (each loader creates and pre-faults its
 * workers' receive segments and its read staging before it answers: {@code buffer_setup_s}) and
 * update once cold (JIT-cold services, the plan computed, first connections: {@code
 * cold_update_s}), then more publish-and-update rounds let the JIT settle ({@code --warmup} of
 * them, or by default until two rounds in a row spend at most 3% of the lab's CPU compiling), and
 * {@code --repeat} (3) more are measured; the figures are those of the median round ({@code
 * rounds_update_s} lists every measured round's {@code update_s}). Every byte of the last
 * generation is then checked ({@code --no-verify} skips that). One JSON line:
 *
 * <ul>
 *   <li>{@code warmups}, {@code repeat}: the rounds run before the measured ones and the measured
 *       rounds, so lines of runs with other settings are not taken for each other; {@code
 *       jit_settled}: whether the last two warm-up rounds spent at most 3% of the lab's CPU in the
 *       JVMs' compiler threads
 *   <li>{@code bytes_delivered}: bytes landing in worker buffers (pushes and fan-outs)
 *   <li>{@code local_bytes}, {@code tcp_bytes}: what the loaders' engines moved during the apply,
 *       store reads included, per transport; {@code install_bytes}: what a staged install copies
 *       into the engines' serving copies (every delivered byte; 0 in place and in compat mode), a
 *       local byte movement of the bound too
 *   <li>{@code update_s}: first update request to the last engine seeing {@code UPDATED}
 *   <li>{@code fetch_s}, {@code install_s}, {@code pause_s}: the slowest loader's fetch (start to
 *       the group's consensus that every loader fetched and verified), install (the engine's
 *       install call, or the end of the fetch, to the end) and pause (the part of the update its
 *       engine spends paused, as the loader sees it) in the median round. Compat engines, and
 *       direct engines with {@code --direct-install staged}, serve through the fetch and pause to
 *       install ({@code install} {@code on-request}); in-place direct engines drain first and pause
 *       through the whole update ({@code with-update})
 *   <li>{@code bound_s}: the least time this machine needs for the round's byte movements and the
 *       proof of what landed, with the parallelism the update may use ({@link Yardsticks}): local
 *       bytes at the fastest copy rate of every core at once ({@code memcpy_all_gbps}, {@code
 *       copy_threads}: the C library's memcpy, one slice per thread, best of four rounds), plus tcp
 *       bytes at the rate of as many concurrent loopback streams as a loader opens per peer ({@code
 *       tcp_streams_gbps}, {@code tcp_streams}, best of three 1 GiB transfers), plus one read of
 *       every delivered byte at the CRC32C rate of every core at once ({@code checksum_all_gbps}):
 *       a one-sided write lands without its receiver touching it, and every byte is proven before
 *       it is installed (none with {@code --no-checksums}). All measured in this run, before the
 *       lab starts and after its rounds, the faster of each taken; {@code update_vs_bound} = bound
 *       / update, above 1.0 only if the yardstick misses a way the machine moves bytes
 *   <li>{@code bound_move_s}, {@code update_vs_move_bound}: the byte movements alone, without the
 *       proof's read
 *   <li>{@code bound_single_thread_s}, {@code update_vs_single_thread_bound}: the bound printed
 *       before, one thread's Java copy ({@code memcpy_gbps}) and one stream ({@code tcp_gbps}),
 *       which the update beat by up to 1.5x in compat mode
 *   <li>{@code first_weights_s}: a restarted engine's wait for its first weights ({@link
 *       FirstWeights}): engine {@value #RESTARTED} registers again ({@code first_weights_setup_s}:
 *       the same receive buffers as before, which its loader keeps under a new incarnation, and its
 *       read staging, kept too; no page is faulted again), then every engine updates to a new
 *       generation ({@code first_weights_update_s}, which rewrites and checks every byte of the
 *       kept buffers); its bytes are checked too
 *   <li>{@code cold_prepare_ms}, {@code cold_apply_ms}: the slowest loader's prepare and apply in
 *       the cold update, beside {@code prepare_ms} and {@code apply_ms} of the measured one: the
 *       cold prepare's excess is the plan's first computation, first connections and the JIT, the
 *       cold apply's the JIT and first transfers to each peer
 *   <li>{@code store_read_ratio}: store bytes the loaders read / bytes the target needs
 *   <li>{@code naive_update_s}: every worker reading everything it needs from the store itself, all
 *       at once, in this run
 *   <li>{@code cpu_busy}: the fraction of the machine's cores busy during the median round
 *       (/proc/stat; null where unknown). Every service of the lab shares them, while the bound's
 *       memcpy and socket rates are each measured alone: near 1.0 the round was CPU-bound, and
 *       {@code update_vs_bound} measures the machine's cores as much as the design
 *   <li>{@code cpu_s}, {@code jit_cpu_s}: the CPU seconds each role of the lab ({@code
 *       control-api}, {@code publishers}, {@code loaders}, and {@code bench}, this process, which
 *       plays the trainer and the engines) spent during the median round, and the part of it their
 *       JVMs' JIT compiler threads took ({@link ServiceCpu}): what shares the cores with the bytes'
 *       movement
 *   <li>{@code checksums}: whether the end-to-end proof ran ({@code --no-checksums} turns it off in
 *       control-api and every loader, for comparison only); {@code verify_ms}: the largest time one
 *       loader's data plane spent taking the CRC32C of what it read (summed over its copy and
 *       receive threads, which take it fused with moving each block) plus control-api's combine and
 *       comparison at the all-applied barrier ({@code loader_checksum_ms}, {@code
 *       control_verify_ms}), in the measured round; {@code objects_verified}: objects proven
 *       against their published checksums in that round
 * </ul>
 *
 * <p>{@code --engine=mooncake} runs the scenario twice in the run: first a lab on the built-in
 * engine (rounds and the bytes check only), then one whose every service runs on the real Mooncake
 * Store and Transfer Engine ({@code relay.dataplane.engine=mooncake}, tcp transport, a master of
 * the pinned wheel in a namespace of its own: {@link MooncakeServices}). The line then starts with
 * {@code "engine":"mooncake"}, its figures are Mooncake's ({@code naive_update_s} null: the naive
 * readers register staging of their own, which a Mooncake agent cannot map; {@code cpu_s} gains
 * {@code mooncake_agents}, the services' agent processes), and it ends with the built-in lab's
 * {@code builtin_update_s}, {@code builtin_cold_update_s}, {@code builtin_rounds_update_s}, {@code
 * builtin_store_read_ratio}, {@code builtin_update_vs_bound} (against the same yardsticks) and
 * {@code builtin_bytes_verified}, and {@code mooncake_vs_builtin} = {@code builtin_update_s /
 * update_s}: a speed ratio as {@code tcp_vs_socket} is, below 1.0 where Mooncake's update was
 * slower.
 */
public final class UpdateBench {
    private static final long MAX_FRAGMENT = Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES;

    /**
     * Connections a loader's data plane opens per peer: the loaders' {@code
     * relay.dataplane.streams-per-peer} (their application.yaml, which the lab does not override),
     * the streams the bound's socket rate is measured with.
     */
    static final int ENGINE_STREAMS = DataplaneConfig.DEFAULT_PEER_STREAMS;

    /** Threads the bound's copy rate is measured with: every core, as the lab's services use. */
    static final int COPY_THREADS = Runtime.getRuntime().availableProcessors();

    /** The engine {@code first_weights_s} restarts. */
    static final int RESTARTED = 0;

    static final int TRAINER_NODES = 2;
    static final int ROLLOUT_NODES = 2;

    private UpdateBench() {}

    /**
     * {@code ./relay bench update}'s flags, as its {@code --help} describes them, with {@code
     * --hosts} or without (then the hosts run their own Redis, and the proof and the bytes check
     * are always on).
     */
    public record Options(
            String model,
            int instances,
            int tp,
            Mode mode,
            long seed,
            WarmupRounds rounds,
            Install install,
            boolean checksums,
            boolean verify,
            DataplaneEngine engine,
            boolean hosts,
            double linkGbps,
            Path root) {

        /** The lab to start: two trainer and two rollout nodes ({@link BenchServices#site}). */
        LabCluster.Spec spec() {
            return new LabCluster.Spec(
                    model,
                    instances,
                    tp,
                    mode,
                    seed,
                    TRAINER_NODES,
                    ROLLOUT_NODES,
                    BenchServices.site(root),
                    LabCluster.Serving.TENSOR_PARALLEL);
        }
    }

    /**
     * {@code ./relay bench update}: prints the bench's JSON line; with {@code --hosts} on the
     * multi-host lab, its links shaped ({@link HostsUpdateBench}).
     */
    public static void run(Options options) throws Exception {
        if (options.hosts()) {
            HostsUpdateBench.run(options);
            return;
        }
        System.out.println(line(options, () -> Yardsticks.measure(COPY_THREADS, ENGINE_STREAMS)));
    }

    /**
     * The rounds of {@link WarmupRounds#run} on any lab, its engines first told how they take an
     * update ({@code --direct-install}, and whether they serve through the fetch); {@code services}
     * tells the CPU the lab's services spent, where the bench can see them.
     */
    static WarmupRounds.Rounds<LabUpdate> rounds(
            Cluster lab, Options options, Supplier<ServiceCpu> services) throws Exception {
        if (options.install().staged()) {
            lab.directInstall(DirectInstall.STAGED);
        }
        lab.installOnRequest(options.install().onRequest());
        return options.rounds()
                .run(
                        step -> lab.publishGeneration(step).generation(),
                        () -> lab.updateAll().requireUpdated(),
                        lab::collectGarbage,
                        services);
    }

    /**
     * Runs the bench as {@code options} say (on Mooncake, after the same rounds on the built-in
     * engine) and returns its JSON line; {@code yardsticks} measures the bound's rates (before the
     * labs and after).
     */
    static String line(Options options, Callable<Yardsticks> yardsticks) throws Exception {
        LabCluster.Spec spec = options.spec();
        Topology topology = Topology.uniform(TRAINER_NODES, ROLLOUT_NODES, 1, 100);
        SourceManifest manifest = LabCatalog.publishedManifest(spec.model());
        TargetPlacement placement = LabCatalog.placementFor(manifest, spec);
        long needed = storeBytesNeeded(Planner.plan(manifest, placement, topology));
        // The yardsticks on a quiet machine, before any service starts; measured again after the
        // rounds, and the faster of the two taken (see Yardsticks).
        Yardsticks quiet = yardsticks.call();
        // With Mooncake, the built-in engine's rounds first, on a lab of its own, then Mooncake's:
        // the same scenario in the same run, each lab alone on the machine.
        LabRun builtin =
                options.engine() == DataplaneEngine.MOONCAKE
                        ? LabRun.measure(
                                options,
                                DataplaneEngine.BUILTIN,
                                false,
                                manifest,
                                placement,
                                topology)
                        : null;
        LabRun measured =
                LabRun.measure(options, options.engine(), true, manifest, placement, topology);
        Yardsticks rates = quiet.best(yardsticks.call());
        String line = measured.json(rates, needed);
        if (builtin == null) {
            return line;
        }
        double builtinS = builtin.median().update().seconds();
        double mooncakeS = measured.median().update().seconds();
        return "{\"engine\":\"mooncake\","
                + line.substring(1, line.length() - 1)
                + String.format(
                        Locale.ROOT,
                        ",\"builtin_update_s\":%.4f,\"builtin_cold_update_s\":%.4f,"
                                + "\"builtin_rounds_update_s\":%s,"
                                + "\"builtin_store_read_ratio\":%.4f,"
                                + "\"builtin_update_vs_bound\":%.3f,"
                                + "\"builtin_bytes_verified\":%d,"
                                + "\"mooncake_vs_builtin\":%.3f}",
                        builtinS,
                        builtin.rounds().cold().seconds(),
                        builtin.rounds().secondsJson(LabUpdate::seconds),
                        (double) builtin.median().update().storeBytesRead() / needed,
                        builtin.boundSeconds(rates) / builtinS,
                        builtin.verified(),
                        builtinS / mooncakeS);
    }

    /**
     * What one lab of the scenario measured: its rounds (the median one picked), the bytes it
     * checked, control-api's proof of the median round, the engines' registration, and (for the
     * run's main lab) a restarted engine's first weights and the naive baseline (NaN where not
     * measured: on Mooncake, whose agents cannot map the naive readers' own staging).
     */
    record LabRun(
            Options options,
            LabCluster.Spec spec,
            WarmupRounds.Rounds<LabUpdate> rounds,
            WarmupRounds.Measured<LabUpdate> median,
            long verified,
            long objectsVerified,
            long controlVerifyMs,
            double registrationSeconds,
            FirstWeights first,
            double naiveSeconds) {

        /**
         * Starts the lab {@code options} describe with every service on {@code engine} (on Mooncake
         * against a master of its own, {@link MooncakeServices}, removed with the lab), runs the
         * rounds, checks the last generation's bytes unless {@code --no-verify}, and with {@code
         * full} measures the first weights of a restarted engine and (on the built-in engine) the
         * naive baseline.
         */
        static LabRun measure(
                Options options,
                DataplaneEngine engine,
                boolean full,
                SourceManifest manifest,
                TargetPlacement placement,
                Topology topology)
                throws Exception {
            boolean mooncake = engine == DataplaneEngine.MOONCAKE;
            LabCluster.Spec spec = options.spec();
            boolean verify = options.verify();
            // On Mooncake the master starts first and goes last (a null resource is not closed).
            try (MooncakeServices master = mooncake ? MooncakeServices.start() : null;
                    LabCluster lab = LabCluster.start(spec, options.checksums())) {
                Map<String, List<Long>> roles = new LinkedHashMap<>(lab.servicePids());
                if (mooncake) {
                    // each service's Mooncake agent: where Mooncake's own work is done
                    roles.put("mooncake_agents", descendants(lab.servicePids()));
                }
                roles.put("bench", List.of(ProcessHandle.current().pid()));
                WarmupRounds.Rounds<LabUpdate> rounds =
                        UpdateBench.rounds(lab, options, () -> ServiceCpu.now(roles));
                WarmupRounds.Measured<LabUpdate> median = rounds.median(LabUpdate::seconds);
                long verified = verify ? lab.verifyAll(rounds.lastGeneration()) : 0;
                UpdateSession session = lab.session(median.generation(), "lab");
                long controlVerifyMs =
                        session.getDurations() == null
                                ? 0
                                : nz(session.getDurations().getVerifyMs());
                double naive =
                        full && !mooncake
                                ? UpdateBench.naiveSeconds(
                                        manifest,
                                        placement,
                                        topology,
                                        spec.redisUri(),
                                        lab.dataplanePrefix(),
                                        lab.dataplaneSecret(),
                                        rounds.lastGeneration())
                                : Double.NaN;
                FirstWeights first =
                        full
                                ? FirstWeights.ofRestartedEngine(
                                        lab, rounds.nextStep(), RESTARTED, verify)
                                : null;
                return new LabRun(
                        options,
                        spec,
                        rounds,
                        median,
                        verified,
                        nz(session.getVerifiedObjects()),
                        controlVerifyMs,
                        lab.registrationSeconds(),
                        first,
                        naive);
            }
        }

        /** The processes the services started (on Mooncake: their agents). */
        private static List<Long> descendants(Map<String, List<Long>> services) {
            List<Long> out = new ArrayList<>();
            for (List<Long> pids : services.values()) {
                for (long pid : pids) {
                    ProcessHandle.of(pid)
                            .ifPresent(p -> p.descendants().forEach(d -> out.add(d.pid())));
                }
            }
            return out;
        }

        private long local() {
            return median.update().engineLocalBytes();
        }

        /**
         * The bytes a staged install copies from the received shards into what the engines serve
         * from: every delivered byte, once (the loaders copy outside their data planes' counters).
         */
        private long installBytes() {
            return options.install().staged() ? median.update().bytesReceived() : 0;
        }

        private long tcp() {
            return median.update().engineTcpBytes();
        }

        /**
         * The least time the machine needs for the median round's byte movements and, when the
         * update proves what landed, one read of every delivered byte.
         */
        double boundSeconds(Yardsticks rates) {
            return rates.boundSeconds(
                    local() + installBytes(),
                    tcp(),
                    options.checksums() ? median.update().bytesReceived() : 0);
        }

        /** The bench's JSON line for this lab (first weights and naive from {@code full}). */
        String json(Yardsticks rates, long needed) {
            LabUpdate warm = median.update();
            long local = local();
            long tcp = tcp();
            long loaderChecksumMs = warm.slowest(PhaseDurations::getVerifyMs);
            double bound = boundSeconds(rates);
            double moveBound = rates.moveSeconds(local + installBytes(), tcp);
            double singleThreadBound = rates.singleThreadBoundSeconds(local, tcp);
            return String.format(
                    Locale.ROOT,
                    "{\"model\":\"%s\",\"mode\":\"%s\",\"instances\":%d,\"tp\":%d,"
                            + "\"direct_install\":\"%s\",\"install\":\"%s\","
                            + "\"pause_s\":%.4f,\"fetch_s\":%.4f,\"install_s\":%.4f,"
                            + "\"warmups\":%d,\"jit_settled\":%s,\"repeat\":%d,"
                            + "\"generation\":%d,\"bytes_delivered\":%d,\"local_bytes\":%d,"
                            + "\"install_bytes\":%d,"
                            + "\"tcp_bytes\":%d,\"update_s\":%.4f,\"bound_s\":%.4f,"
                            + "\"update_vs_bound\":%.3f,\"bound_move_s\":%.4f,"
                            + "\"update_vs_move_bound\":%.3f,\"bound_single_thread_s\":%.4f,"
                            + "\"update_vs_single_thread_bound\":%.3f,"
                            + "\"first_weights_s\":%.4f,\"first_weights_setup_s\":%.4f,"
                            + "\"first_weights_update_s\":%.4f,"
                            + "\"store_read_ratio\":%.4f,"
                            + "\"naive_update_s\":%s,\"cold_update_s\":%.4f,"
                            + "\"buffer_setup_s\":%.4f,\"cold_prepare_ms\":%d,"
                            + "\"cold_apply_ms\":%d,"
                            + "\"memcpy_gbps\":%.3f,\"memcpy_all_gbps\":%.3f,"
                            + "\"copy_threads\":%d,\"checksum_all_gbps\":%.3f,"
                            + "\"tcp_gbps\":%.3f,"
                            + "\"tcp_streams_gbps\":%.3f,\"tcp_streams\":%d,"
                            + "\"bytes_verified\":%d,"
                            + "\"prepare_ms\":%d,\"apply_ms\":%d,\"post_apply_ms\":%d,"
                            + "\"checksums\":%b,\"verify_ms\":%d,\"loader_checksum_ms\":%d,"
                            + "\"control_verify_ms\":%d,\"objects_verified\":%d,"
                            + "\"rounds_update_s\":%s,\"cpu_busy\":%s,%s}",
                    spec.model(),
                    spec.modeName(),
                    spec.instances(),
                    spec.tp(),
                    options.install().directInstall(),
                    options.install().when(),
                    warm.slowest(PhaseDurations::getPauseMs) / 1e3,
                    warm.slowest(PhaseDurations::getFetchMs) / 1e3,
                    warm.slowest(PhaseDurations::getInstallMs) / 1e3,
                    rounds.warmups(),
                    rounds.settled(),
                    options.rounds().repeat(),
                    median.generation(),
                    warm.bytesReceived(),
                    local,
                    installBytes(),
                    tcp,
                    warm.seconds(),
                    bound,
                    bound / warm.seconds(),
                    moveBound,
                    moveBound / warm.seconds(),
                    singleThreadBound,
                    singleThreadBound / warm.seconds(),
                    first.seconds(),
                    first.setupSeconds(),
                    first.updateSeconds(),
                    (double) warm.storeBytesRead() / needed,
                    Double.isNaN(naiveSeconds)
                            ? "null"
                            : String.format(Locale.ROOT, "%.4f", naiveSeconds),
                    rounds.cold().seconds(),
                    registrationSeconds,
                    rounds.cold().slowest(PhaseDurations::getPrepareMs),
                    rounds.cold().slowest(PhaseDurations::getApplyMs),
                    rates.memcpyOneThread() / 1e9,
                    rates.localRate() / 1e9,
                    rates.copyThreads(),
                    rates.checksumParallel() / 1e9,
                    rates.socketOneStream() / 1e9,
                    rates.tcpRate() / 1e9,
                    rates.streams(),
                    verified + first.bytesVerified(),
                    warm.slowest(PhaseDurations::getPrepareMs),
                    warm.slowest(PhaseDurations::getApplyMs),
                    warm.slowest(PhaseDurations::getPostApplyMs),
                    options.checksums(),
                    loaderChecksumMs + controlVerifyMs,
                    loaderChecksumMs,
                    controlVerifyMs,
                    objectsVerified,
                    rounds.secondsJson(LabUpdate::seconds),
                    median.cpuBusyJson(),
                    median.servicesCpuJson());
        }
    }

    /** Every byte {@code plan} reads from the store: each stored byte a worker needs, once. */
    static long storeBytesNeeded(Plan plan) {
        long bytes = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            bytes += plan.readBytes(i);
        }
        return bytes;
    }

    /**
     * Every worker reads everything it needs from the store itself, all workers at once, each with
     * its node's label (so the transports match the loaders'), into a reused staging buffer.
     */
    private static double naiveSeconds(
            SourceManifest manifest,
            TargetPlacement placement,
            Topology topology,
            String redisUri,
            String dpPrefix,
            byte[] secret,
            long generation)
            throws Exception {
        Map<String, Dataplane> planes = new LinkedHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(placement.workers().size());
        try {
            List<Plan> plans = new ArrayList<>();
            for (Worker w : placement.workers()) {
                planes.computeIfAbsent(
                        w.node(),
                        n ->
                                Dataplane.open(
                                        DataplaneConfig.builder(n)
                                                .redisUri(redisUri)
                                                .keyPrefix(dpPrefix)
                                                .secret(secret)
                                                .build()));
                plans.add(Planner.plan(manifest, new TargetPlacement(List.of(w)), topology));
            }
            List<Dataplane> planeOfWorker =
                    placement.workers().stream().map(w -> planes.get(w.node())).toList();
            long started = System.nanoTime();
            NaiveReader.readAtOnce(pool, planeOfWorker, plans, manifest.model(), generation);
            return (System.nanoTime() - started) / 1e9;
        } finally {
            pool.shutdownNow();
            for (Dataplane dp : planes.values()) {
                dp.close();
            }
        }
    }

    private static long nz(Long value) {
        return value == null ? 0 : value;
    }

    /**
     * How the engines take an update: {@code staged} direct workers receive beside the weights they
     * serve ({@code --direct-install staged}); compat and staged instances fetch while serving and
     * install on request, in-place ones pause for the whole update.
     */
    public record Install(boolean staged, boolean onRequest) {
        /** {@code --direct-install staged} or in place, for instances of {@code mode}. */
        public static Install of(boolean staged, Mode mode) {
            return new Install(staged, staged || mode == Mode.COMPAT);
        }

        /** {@code direct_install} as the bench lines report it. */
        String directInstall() {
            return staged ? "staged" : "in-place";
        }

        /** {@code install} as the bench lines report it: when the engines install. */
        String when() {
            return onRequest ? "on-request" : "with-update";
        }
    }
}
