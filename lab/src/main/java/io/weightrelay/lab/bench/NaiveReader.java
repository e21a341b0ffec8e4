package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.lab.Args;
import io.weightrelay.lab.cluster.LabCatalog;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.hosts.Agent;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.topology.Topology;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The naive update of {@link HostsUpdateBench}, run inside one rollout host and driven over stdin
 * (one command a line, one JSON answer a line on stdout): every worker of that host's rollout node
 * reads everything it needs from the store itself, over the host's (shaped) data-plane link, with
 * no single pull and no redistribution. Each worker reads with a data plane of its own, as a worker
 * process would, labelled with the node and bound to the host's data-plane address, all workers at
 * once, each read into a staging buffer of its own (the largest read's span, reused), as {@link
 * UpdateBench}'s loopback baseline does: the bytes on the links are the same as with a final buffer
 * per worker, without another full copy of the model per worker on a shared machine.
 *
 * <pre>
 * --node N --bind ADDRESS --redis URI --prefix wr:... --secret-file F --model M --instances I
 * --tp T --mode compat|direct --trainer-nodes T --rollout-nodes R --streams S
 *   (ready)          -> {"ok":true,"workers":W,"bytes":B}   B: what this host's workers need
 *   read GENERATION  -> {"ok":true,"seconds":s,"bytes":b,"tcp_read":t,"local_read":l}
 * </pre>
 */
public final class NaiveReader {

    private final SourceManifest manifest;
    private final List<Plan> plans = new ArrayList<>();
    private final List<Dataplane> planes = new ArrayList<>();
    private final ExecutorService pool;

    private NaiveReader(Args a) throws Exception {
        String node = a.get("node", "");
        String model = a.get("model", "qwen2.5-0.5b");
        int trainerNodes = a.getInt("trainer-nodes", 2);
        int rolloutNodes = a.getInt("rollout-nodes", 2);
        byte[] secret =
                Files.readString(Path.of(a.get("secret-file", "")))
                        .strip()
                        .getBytes(StandardCharsets.UTF_8);
        this.manifest = LabCatalog.publishedManifest(model);
        TargetPlacement placement =
                LabCatalog.placementFor(
                        manifest,
                        LabCluster.Spec.rolloutOnly(
                                model,
                                a.getInt("instances", 4),
                                a.getInt("tp", 2),
                                a.mode(),
                                rolloutNodes));
        // The link rate does not change what one worker alone reads: every byte it needs, once.
        Topology topology = Topology.uniform(trainerNodes, rolloutNodes, 1, 100);
        for (Worker w : placement.workers()) {
            if (!w.node().equals(node)) {
                continue;
            }
            plans.add(Planner.plan(manifest, new TargetPlacement(List.of(w)), topology));
            planes.add(
                    Dataplane.open(
                            DataplaneConfig.builder(node)
                                    .redisUri(a.get("redis", "redis://127.0.0.1:6379"))
                                    .keyPrefix(a.get("prefix", "wr:bench:"))
                                    .tcpBindHost(a.get("bind", "127.0.0.1"))
                                    .tcpStreams(a.getInt("streams", 4))
                                    .secret(secret)
                                    .build()));
        }
        if (plans.isEmpty()) {
            throw new IllegalArgumentException("no worker of the placement is on node " + node);
        }
        this.pool = Executors.newFixedThreadPool(plans.size());
    }

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        Agent agent = Agent.claimStdout();
        NaiveReader reader = new NaiveReader(a);
        long needed = reader.plans.stream().mapToLong(UpdateBench::storeBytesNeeded).sum();
        agent.say("{\"ok\":true,\"workers\":" + reader.plans.size() + ",\"bytes\":" + needed + "}");
        agent.serve(
                w -> {
                    if (!w[0].equals("read") || w.length != 2) {
                        throw new IllegalArgumentException(
                                "unknown command " + String.join(" ", w));
                    }
                    return reader.read(Long.parseLong(w[1]));
                });
        reader.pool.shutdownNow();
        for (Dataplane dp : reader.planes) {
            dp.close();
        }
    }

    /** Every worker of this host reads all it needs of {@code generation}, all at once. */
    private String read(long generation) throws Exception {
        long[] before = readCounters();
        long started = System.nanoTime();
        long bytes = readAtOnce(pool, planes, plans, manifest.model(), generation);
        double seconds = (System.nanoTime() - started) / 1e9;
        long[] after = readCounters();
        return String.format(
                Locale.ROOT,
                "{\"ok\":true,\"seconds\":%.6f,\"bytes\":%d,\"tcp_read\":%d,\"local_read\":%d}",
                seconds,
                bytes,
                after[0] - before[0],
                after[1] - before[1]);
    }

    /** The tcp and the local bytes this host's workers' data planes have read so far. */
    private long[] readCounters() {
        long[] read = new long[2];
        for (Dataplane dp : planes) {
            read[0] += dp.counters().tcpRead();
            read[1] += dp.counters().localRead();
        }
        return read;
    }

    /**
     * Each worker's naive reads ({@code plans.get(k)} through {@code planes.get(k)}), every worker
     * at once on {@code pool}; returns the bytes read.
     */
    static long readAtOnce(
            ExecutorService pool,
            List<Dataplane> planes,
            List<Plan> plans,
            String model,
            long generation)
            throws Exception {
        List<Future<Long>> futures = new ArrayList<>();
        for (int k = 0; k < plans.size(); k++) {
            Plan plan = plans.get(k);
            Dataplane dp = planes.get(k);
            futures.add(pool.submit(() -> readAll(dp, plan, model, generation)));
        }
        long bytes = 0;
        for (Future<Long> f : futures) {
            bytes += f.get();
        }
        return bytes;
    }

    /**
     * One worker's naive reads, one after another, each exactly the ranges its plan reads, into a
     * staging buffer of the largest read's span (also {@link UpdateBench}'s loopback baseline).
     */
    private static long readAll(Dataplane dp, Plan plan, String model, long generation) {
        long biggest = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            biggest = Math.max(biggest, plan.readSpan(i));
        }
        try (RegisteredBuffer staging =
                dp.registerBuffer(ByteBuffer.allocateDirect((int) Math.max(1, biggest)))) {
            long bytes = 0;
            for (int i = 0; i < plan.readCount(); i++) {
                List<ReadRange> ranges = new ArrayList<>();
                for (int r = plan.rangeFirst(i); r < plan.rangeEnd(i); r++) {
                    ranges.add(
                            new ReadRange(
                                    plan.rangeStart(r),
                                    plan.rangeLength(r),
                                    staging,
                                    plan.rangeStart(r) - plan.readStart(i)));
                }
                String key =
                        new GenerationId(model, generation)
                                .objectKey(plan.objectId(plan.readObject(i)));
                long[] got = dp.store().getIntoRanges(key, ranges);
                for (int r = 0; r < got.length; r++) {
                    if (got[r] != ranges.get(r).length()) {
                        throw new IllegalStateException("naive read of " + key + " fell short");
                    }
                    bytes += got[r];
                }
            }
            return bytes;
        }
    }
}
