package io.weightrelay.lab.bench;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.lab.bench.planner.ClusterModel;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.lab.hosts.Host;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.HostLabException;
import io.weightrelay.lab.hosts.HostProcess;
import io.weightrelay.lab.hosts.LinkCounters;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.timing.Traffic;
import io.weightrelay.reshard.topology.Topology;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import tools.jackson.databind.JsonNode;

/**
 * {@code ./relay bench update --hosts [--link-gbps G] --model M --instances I --tp P --mode
 * compat|direct [--direct-install in-place|staged] [--warmup N] [--repeat N]}: the update on the
 * multi-host lab ({@link MultiHostCluster}: Redis, control-api, two trainer hosts and two rollout
 * hosts, each its own network namespace) with every host's data-plane link limited to {@code G}
 * Gbit/s in both directions ({@link HostLab#shapeDataLinkBothWays}), so that the links, not this
 * machine's CPU, are the bottleneck, as on a cluster. The control network (REST, Redis: kilobytes
 * per update) is left unshaped.
 *
 * <p>As {@link UpdateBench}: a cold update, {@code --warmup} (2) more publish-and-update rounds,
 * then {@code --repeat} (3) measured ones whose median is reported; every engine's bytes are
 * checked against the trainer's generator. Then, on the same shaped links, the naive update of the
 * last generation ({@link NaiveReader}: every worker reads everything it needs from the store
 * itself). One JSON line:
 *
 * <ul>
 *   <li>{@code warmups}, {@code repeat}: the rounds before the measured ones, and those measured
 *   <li>{@code update_s}: from the update request to the last engine seeing {@code UPDATED}, as
 *       each rollout host's agent times it (before it checks the bytes)
 *   <li>{@code naive_update_s}: the slowest rollout host's naive read, all workers at once
 *   <li>{@code apply_s}, {@code prepare_ms}, {@code post_apply_ms}: the loaders' phases (the
 *       slowest of each), the transfer being the apply phase
 *   <li>{@code direct_install}, {@code install}, {@code pause_s}, {@code fetch_s}, {@code
 *       install_s}: as in {@link UpdateBench} (the slowest loader's of each in the median round):
 *       compat engines, and direct ones with {@code --direct-install staged}, serve through the
 *       fetch and pause only to install; in-place direct engines pause for the whole update
 *   <li>{@code predicted_update_s}: {@link ClusterModel#predictedSeconds(Plan, double)} of the
 *       planner's plan for this placement on the lab's topology (two trainer and two rollout nodes,
 *       one NIC each at the link rate), {@code payload_fraction} of each link's rate carrying TCP
 *       payload ({@code predicted_line_rate_s}: all of it); {@code update_vs_predicted} = predicted
 *       / measured; {@code naive_predicted_s}: the same model's reading of the naive design (the
 *       busiest NIC direction, every worker's bytes entering its node and leaving its trainer)
 *   <li>{@code predicted_busiest_in_bytes} (the plan's busiest rollout NIC inbound) against {@code
 *       busiest_in_payload_bytes}, the most TCP payload one host's data link received during the
 *       measured update, from the bridge ports' counters
 *   <li>{@code store_read_ratio}, {@code bytes_verified}, {@code qdisc_drops} (frames the shaping
 *       queues dropped, all links, whole run), {@code load_avg} (1-minute, start and end), {@code
 *       cpu_busy} (the fraction of the machine's cores busy during the median round, all hosts
 *       together: they share the machine's cores; null where unknown)
 * </ul>
 *
 * Exit 1 when a byte was wrong or missing, the store was not read exactly once, or a floor of issue
 * #16 was missed: {@code update_vs_predicted} >= 0.8 and {@code naive_update_s} >= 2.5 x {@code
 * update_s} in compat mode, 1.6 x in direct mode. Needs root (exit 3 otherwise).
 */
public final class HostsUpdateBench {

    private static final double MIN_VS_PREDICTED = 0.8;

    /**
     * What of a shaped link's rate is TCP payload: {@code tc tbf} counts whole frames as the veth
     * carries them, so a 1500-byte MTU frame with TCP timestamps carries 1448 payload bytes in 1448
     * + 66 ({@link LinkCounters#FRAME_HEADER_BYTES}).
     */
    static final double PAYLOAD_FRACTION = 1448.0 / (1448 + LinkCounters.FRAME_HEADER_BYTES);

    private HostsUpdateBench() {}

    /** {@code ./relay bench update --hosts}: prints the bench's JSON line; exit 1 on a miss. */
    static void run(UpdateBench.Options options) throws Exception {
        WarmupRounds run = options.rounds();
        double linkGbps = options.linkGbps();
        UpdateBench.Install install = options.install();
        try {
            HostLab.requireRoot();
        } catch (HostLabException e) {
            System.err.println("relay bench update --hosts: " + e.getMessage());
            System.exit(3);
        }
        String loadBefore = loadAverage();

        LabCluster.Spec spec = options.spec();
        List<String> failed = new ArrayList<>();
        try (MultiHostCluster lab = MultiHostCluster.start(spec, "wr-hbench")) {
            SourceManifest manifest = lab.manifest();
            TargetPlacement placement = lab.placement();
            Topology topology =
                    Topology.uniform(
                            UpdateBench.TRAINER_NODES, UpdateBench.ROLLOUT_NODES, 1, linkGbps);
            Plan plan = Planner.plan(manifest, placement, topology);
            double predictedLineRate = ClusterModel.predictedSeconds(plan);
            double predicted = ClusterModel.predictedSeconds(plan, PAYLOAD_FRACTION);
            double predictedBusiestIn = max(Traffic.of(plan).nicIn());
            long needed = UpdateBench.storeBytesNeeded(plan);
            double naivePredicted =
                    naivePredictedSeconds(manifest, placement, topology, linkGbps)
                            / PAYLOAD_FRACTION;

            String rate = Math.max(1, Math.round(linkGbps * 1e6)) + "kbit";
            for (Host h : lab.hostLab().hosts()) {
                lab.hostLab().shapeDataLinkBothWays(h.name(), rate);
            }

            // the hosts' services run under their host agents: their CPU is not broken down
            WarmupRounds.Rounds<LabUpdate> rounds = UpdateBench.rounds(lab, options, () -> null);
            WarmupRounds.Measured<LabUpdate> median = rounds.median(LabUpdate::slowestSeconds);
            long generation = median.generation();
            LabUpdate warm = median.update();
            double updateSeconds = warm.slowestSeconds();

            // The last generation: the median round's may be collected already.
            Naive naive = naive(lab, spec, rounds.lastGeneration());

            long storeRead = warm.storeBytesRead();
            double storeReadRatio = (double) storeRead / needed;
            long busiestIn = 0;
            for (LinkCounters.HostLinks h : warm.traffic().orElseThrow().hosts().values()) {
                busiestIn = Math.max(busiestIn, h.dataReceived().tcpPayload());
            }
            long drops = 0;
            for (Host h : lab.hostLab().hosts()) {
                for (JsonNode q : lab.hostLab().dataLinkQdiscs(h.name())) {
                    drops += q.path("drops").asLong();
                }
            }
            double naiveRatio = naive.seconds() / updateSeconds;
            double vsPredicted = predicted / updateSeconds;
            double naiveFloor = spec.mode() == Mode.COMPAT ? 2.5 : 1.6;
            System.out.println(
                    String.format(
                            Locale.ROOT,
                            "{\"model\":\"%s\",\"mode\":\"%s\",\"instances\":%d,\"tp\":%d,"
                                    + "\"warmups\":%d,\"repeat\":%d,"
                                    + "\"direct_install\":\"%s\",\"install\":\"%s\","
                                    + "\"pause_s\":%.4f,\"fetch_s\":%.4f,\"install_s\":%.4f,"
                                    + "\"hosts\":%d,\"link_gbps\":%.3f,\"generation\":%d,"
                                    + "\"update_s\":%.4f,\"naive_update_s\":%.4f,"
                                    + "\"naive_vs_update\":%.3f,\"predicted_update_s\":%.4f,"
                                    + "\"update_vs_predicted\":%.3f,\"apply_s\":%.4f,"
                                    + "\"prepare_ms\":%d,\"post_apply_ms\":%d,"
                                    + "\"predicted_line_rate_s\":%.4f,\"payload_fraction\":%.4f,"
                                    + "\"naive_predicted_s\":%.4f,"
                                    + "\"naive_vs_predicted\":%.3f,"
                                    + "\"cold_update_s\":%.4f,\"update_wall_s\":%.4f,"
                                    + "\"store_read_ratio\":%.4f,\"bytes_delivered\":%d,"
                                    + "\"bytes_verified\":%d,\"tcp_bytes\":%d,"
                                    + "\"predicted_busiest_in_bytes\":%d,"
                                    + "\"busiest_in_payload_bytes\":%d,\"naive_bytes\":%d,"
                                    + "\"naive_tcp_read\":%d,\"qdisc_drops\":%d,"
                                    + "\"load_avg\":\"%s -> %s\",\"cpu_busy\":%s}",
                            spec.model(),
                            spec.modeName(),
                            spec.instances(),
                            spec.tp(),
                            rounds.warmups(),
                            run.repeat(),
                            install.directInstall(),
                            install.when(),
                            warm.slowest(PhaseDurations::getPauseMs) / 1e3,
                            warm.slowest(PhaseDurations::getFetchMs) / 1e3,
                            warm.slowest(PhaseDurations::getInstallMs) / 1e3,
                            lab.hostLab().hosts().size(),
                            linkGbps,
                            generation,
                            updateSeconds,
                            naive.seconds(),
                            naiveRatio,
                            predicted,
                            vsPredicted,
                            warm.slowest(PhaseDurations::getApplyMs) / 1e3,
                            warm.slowest(PhaseDurations::getPrepareMs),
                            warm.slowest(PhaseDurations::getPostApplyMs),
                            predictedLineRate,
                            PAYLOAD_FRACTION,
                            naivePredicted,
                            naivePredicted / naive.seconds(),
                            rounds.cold().slowestSeconds(),
                            warm.seconds(),
                            storeReadRatio,
                            warm.bytesReceived(),
                            warm.bytesVerified(),
                            warm.engineTcpBytes(),
                            Math.round(predictedBusiestIn),
                            busiestIn,
                            naive.bytes(),
                            naive.tcpRead(),
                            drops,
                            loadBefore,
                            loadAverage(),
                            median.cpuBusyJson()));
            if (storeRead != needed) {
                failed.add("store_read_ratio " + storeReadRatio + " is not 1");
            }
            // The engines check whole receive buffers: a compat buffer's safetensors header too.
            if (warm.bytesVerified() < warm.bytesReceived() || warm.bytesVerified() == 0) {
                failed.add(
                        "verified "
                                + warm.bytesVerified()
                                + " of "
                                + warm.bytesReceived()
                                + " bytes");
            }
            if (vsPredicted < MIN_VS_PREDICTED) {
                failed.add("update_vs_predicted " + vsPredicted + " < " + MIN_VS_PREDICTED);
            }
            if (naiveRatio < naiveFloor) {
                failed.add("naive_update_s / update_s " + naiveRatio + " < " + naiveFloor);
            }
        }
        if (!failed.isEmpty()) {
            System.err.println("relay bench update --hosts: " + String.join("; ", failed));
            System.exit(1);
        }
    }

    private record Naive(double seconds, long bytes, long tcpRead) {}

    /**
     * Starts a {@link NaiveReader} on every rollout host, waits until each is ready, then has them
     * all read {@code generation} at once.
     */
    private static Naive naive(MultiHostCluster lab, LabCluster.Spec spec, long generation)
            throws Exception {
        List<HostProcess> readers = new ArrayList<>();
        for (String node : lab.rolloutNodes()) {
            Host h = lab.hostLab().host(node);
            readers.add(
                    h.startJava(
                            "naive-" + node,
                            "512m",
                            NaiveReader.class,
                            List.of(
                                    "--node=" + node,
                                    "--bind=" + h.dataAddress(),
                                    "--redis=" + lab.redisUri(),
                                    "--prefix=" + lab.dataplanePrefix(),
                                    "--secret-file=" + lab.dataplaneSecretFile(),
                                    "--model=" + spec.model(),
                                    "--instances=" + spec.instances(),
                                    "--tp=" + spec.tp(),
                                    "--mode=" + spec.modeName(),
                                    "--trainer-nodes=" + spec.trainerNodes(),
                                    "--rollout-nodes=" + spec.rolloutNodes()),
                            lab.logs()));
        }
        for (HostProcess r : readers) {
            r.require(null);
        }
        ExecutorService pool = Executors.newFixedThreadPool(readers.size());
        try {
            List<Future<JsonNode>> futures = new ArrayList<>();
            for (HostProcess r : readers) {
                futures.add(pool.submit(() -> r.require("read " + generation)));
            }
            double seconds = 0;
            long bytes = 0;
            long tcp = 0;
            for (Future<JsonNode> f : futures) {
                JsonNode read = f.get();
                seconds = Math.max(seconds, read.get("seconds").asDouble());
                bytes += read.get("bytes").asLong();
                tcp += read.get("tcp_read").asLong();
            }
            return new Naive(seconds, bytes, tcp);
        } finally {
            pool.shutdownNow();
            for (HostProcess r : readers) {
                r.close(); // end of input: the reader closes its data planes and ends
                lab.hostLab().forget(r);
            }
        }
    }

    /**
     * The cluster model's reading of the naive design: no redistribution, so each rollout NIC
     * receives everything its node's workers need and each trainer node sends everything every
     * worker needs of what it stores; the update lasts as long as the busiest of these.
     */
    static double naivePredictedSeconds(
            SourceManifest manifest,
            TargetPlacement placement,
            Topology topology,
            double linkGbps) {
        Map<String, Long> nodeIn = new LinkedHashMap<>();
        double[] trainerOut = null;
        for (Worker w : placement.workers()) {
            Plan p = Planner.plan(manifest, new TargetPlacement(List.of(w)), topology);
            if (trainerOut == null) {
                trainerOut = new double[p.trainers().count()];
            }
            for (int i = 0; i < p.readCount(); i++) {
                nodeIn.merge(w.node(), p.readBytes(i), Long::sum);
                trainerOut[p.objectTrainer(p.readObject(i))] += p.readBytes(i);
            }
        }
        double busiest = 0;
        for (long b : nodeIn.values()) {
            busiest = Math.max(busiest, b);
        }
        busiest = Math.max(busiest, trainerOut == null ? 0 : max(trainerOut));
        return busiest / (linkGbps * 1e9 / 8);
    }

    private static double max(double[] values) {
        double m = 0;
        for (double v : values) {
            m = Math.max(m, v);
        }
        return m;
    }

    private static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
