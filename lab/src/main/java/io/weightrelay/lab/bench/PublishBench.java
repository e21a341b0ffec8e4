package io.weightrelay.lab.bench;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.publisher.client.model.TransportCounters;
import io.weightrelay.lab.cluster.LabCatalog;
import io.weightrelay.lab.cluster.LabSecrets;
import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.testkit.sim.SimulatedModel;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TrainerSession;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * {@code ./relay bench publish --model qwen2.5-0.5b --trainer-nodes 2}: starts control-api and one
 * publisher-service per trainer node as child JVMs on loopback ports (their executable jars),
 * publishes a warm-up generation, then measures one generation from the first batch handed over
 * (the ranks have written their bytes into staging by then) to the committed generation, and prints
 * one JSON line:
 *
 * <ul>
 *   <li>{@code bytes}: bytes published (stored, rollout dtype)
 *   <li>{@code publish_s}, {@code publish_gbps} (GB/s, 10^9 bytes)
 *   <li>{@code memcpy_gbps}: the same staged bytes copied once in this process after each measured
 *       run, one thread (the best of the runs, like {@code publish_s})
 *   <li>{@code publish_vs_memcpy}: the ratio
 *   <li>{@code network_bytes}: tcp bytes the publishers' engines moved during all measured runs
 *   <li>diagnostics: {@code services_cpu_s} (CPU the child services used during the fastest run,
 *       staging included) and {@code load_avg} (the machine's load, which these figures follow)
 * </ul>
 *
 * The flags and their defaults: {@code ./relay bench publish --help} ({@link Options}; {@code
 * --keep-redis} leaves the run's {@code wr:bench:<run>:} keys in Redis).
 */
public final class PublishBench {

    private static final String TRAINER_TOKEN = "bench-trainer-" + UUID.randomUUID();
    private static final String OPERATOR_TOKEN = "bench-operator-" + UUID.randomUUID();
    private static final long MAX_FRAGMENT = Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES;

    private PublishBench() {}

    /**
     * {@code ./relay bench publish}'s flags, as its {@code --help} describes them; {@code
     * publisherJar} null: the checkout's.
     */
    public record Options(
            String model,
            int trainerNodes,
            int repeat,
            int warmup,
            long maxBatchBytes,
            int inFlight,
            DType trainerDtype,
            DType rolloutDtype,
            String stagingMode,
            long seed,
            Path publisherJar,
            List<String> publisherJvmArgs,
            List<String> publisherArgs,
            BenchServices services) {

        public Options {
            publisherJvmArgs = List.copyOf(publisherJvmArgs);
            publisherArgs = List.copyOf(publisherArgs);
        }
    }

    /** {@code ./relay bench publish}: prints the bench's JSON line. */
    public static void run(Options flags) throws Exception {
        String model = flags.model();
        int nodes = flags.trainerNodes();
        int repeat = Math.max(1, flags.repeat());
        int warmups = Math.max(1, flags.warmup());
        long maxBatch = flags.maxBatchBytes();
        DType trainerDtype = flags.trainerDtype();
        DType rolloutDtype = flags.rolloutDtype();
        long seed = flags.seed();
        String stagingMode = flags.stagingMode();
        BenchServices services = flags.services();
        Path publisherJar = services.jar(flags.publisherJar(), "publisher-service");

        SourceManifest manifest =
                SimulatedModel.manifest(model, trainerDtype, rolloutDtype, MAX_FRAGMENT);
        List<String> names = new ArrayList<>();
        List<Node> topology = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            names.add(Topology.trainerNodeName(i));
            topology.add(new Node(names.get(i), Role.TRAINER, 1, 100));
        }
        long maxNodeBytes = 0;
        for (long b : PublisherAssignment.assign(manifest, new Topology(topology)).bytesPerNode()) {
            maxNodeBytes = Math.max(maxNodeBytes, b);
        }
        long stagedPerNode =
                maxNodeBytes / rolloutDtype.bytes() * trainerDtype.bytes() + (64L << 20);
        // The ranks write everything before the first hand-over when a node's share fits one
        // staging mapping; otherwise they write and hand over in turn (then publish_s includes
        // writing, and the output says stage_all=false).
        long maxStaging = 3L << 29; // 1.5 GiB, well inside one Java mapping
        boolean stageAll = stagedPerNode + maxBatch <= maxStaging;
        long stagingCapacity =
                stageAll
                        ? LabCatalog.roundUp(stagedPerNode + maxBatch)
                        : LabCatalog.roundUp(Math.min(4 * maxBatch, maxStaging));
        // Room for two generations: the measured one lands while the warm-up one is active. With
        // staging in the segment, the measured one is staged where it will be stored.
        boolean inSegment = "segment".equals(stagingMode);
        long segmentSize =
                inSegment
                        ? LabCatalog.roundUp(maxNodeBytes + stagingCapacity + (64L << 20))
                        : LabCatalog.roundUp(2 * maxNodeBytes + (64L << 20));

        BenchRun run = new BenchRun("publish", services);
        // The deployment's data-plane secret: without it control-api's engine may not free in the
        // publishers' segments, and collecting a retired generation would free nothing.
        LabSecrets secrets = LabSecrets.create(run.id);
        String secretFile = "--relay.dataplane.secret-file=" + secrets.dataplaneSecretFile();
        try {
            ServiceProcess control =
                    run.startControlApi(
                            "512m",
                            List.of(),
                            secretFile,
                            "--relay.security.tokens.trainer[0]=" + TRAINER_TOKEN,
                            "--relay.security.tokens.operator[0]=" + OPERATOR_TOKEN);
            Map<String, PublisherClient> publishers = new LinkedHashMap<>();
            for (int i = 0; i < nodes; i++) {
                ServiceProcess p =
                        run.start(
                                "publisher-" + names.get(i),
                                publisherJar,
                                "384m",
                                jvmArgs(flags.publisherJvmArgs(), names.get(i)),
                                concat(
                                        flags.publisherArgs(),
                                        "--relay.segment.node=" + names.get(i),
                                        "--relay.segment.name=bench-" + run.id + "-" + names.get(i),
                                        "--relay.segment.size=" + segmentSize + "B",
                                        "--relay.dataplane.redis-uri=" + run.redisUri,
                                        "--relay.dataplane.key-prefix=" + run.dataplanePrefix,
                                        secretFile,
                                        "--relay.staging.mode=" + stagingMode,
                                        "--relay.staging.path=/dev/shm/wr-bench-staging-"
                                                + run.id
                                                + "-"
                                                + i,
                                        "--relay.staging.capacity=" + stagingCapacity + "B",
                                        "--relay.staging.max-batch-bytes=" + maxBatch + "B",
                                        "--relay.publish.control-api-url=" + control.baseUrl(),
                                        "--relay.publish.control-api-token=" + TRAINER_TOKEN,
                                        "--relay.security.tokens.trainer[0]=" + TRAINER_TOKEN,
                                        "--relay.security.tokens.operator[0]=" + OPERATOR_TOKEN));
                publishers.put(
                        names.get(i),
                        PublisherClient.connect(p.baseUrl(), TRAINER_TOKEN, Duration.ofMinutes(5)));
            }
            List<ServiceProcess> children = run.services();
            for (ServiceProcess c : children) {
                c.awaitHealthy(Duration.ofMinutes(3));
            }

            RestCoordinator coordinator =
                    new RestCoordinator(
                            control.baseUrl(), TRAINER_TOKEN, Duration.ofMinutes(2), MAX_FRAGMENT);
            RankPublisher.Options options =
                    new RankPublisher.Options(flags.inFlight(), stageAll, Duration.ofMinutes(2));
            TrainerSession session = new TrainerSession(coordinator, publishers, options);

            TrainerSession.Outcome cold =
                    session.publish(manifest, 0, g -> new DeterministicWeights(seed, g));
            GenerationsApi operator =
                    new GenerationsApi(
                            RelayClients.of(Endpoint.of(control.baseUrl(), OPERATOR_TOKEN))
                                    .control());
            // More warm-up generations so the services' JIT has compiled the publish path.
            for (int step = 1; step < warmups; step++) {
                operator.collectGarbage(model);
                session.publish(manifest, step, g -> new DeterministicWeights(seed, g));
            }
            List<Measured> runs = new ArrayList<>();
            for (int step = warmups; step < warmups + repeat; step++) {
                // The previous generations are retired; collect them so the segments keep room
                // for the next one (outside the measured interval).
                operator.collectGarbage(model);
                long tcpBefore = tcpBytes(publishers);
                long stageStarted = System.nanoTime();
                List<Duration> cpuBefore = children.stream().map(ServiceProcess::cpu).toList();
                TrainerSession.Outcome o =
                        session.publish(manifest, step, g -> new DeterministicWeights(seed, g));
                Duration cpuUsed = Duration.ZERO;
                StringBuilder each = new StringBuilder();
                for (int c = 0; c < children.size(); c++) {
                    Duration used = children.get(c).cpu().minus(cpuBefore.get(c));
                    cpuUsed = cpuUsed.plus(used);
                    each.append(each.length() == 0 ? "" : ",")
                            .append(
                                    String.format(
                                            Locale.ROOT,
                                            "\"%s\":%.3f",
                                            children.get(c).name(),
                                            used.toNanos() / 1e9));
                }
                long network = tcpBytes(publishers) - tcpBefore;
                runs.add(
                        new Measured(
                                o,
                                stageStarted,
                                network,
                                memcpyGbps(publishers, o),
                                cpuUsed,
                                each.toString()));
            }
            Measured best =
                    runs.stream().min(Comparator.comparingDouble(Measured::publishSeconds)).get();
            double memcpy = runs.stream().mapToDouble(Measured::memcpyGbps).max().getAsDouble();
            long network = runs.stream().mapToLong(Measured::networkBytes).sum();
            long bytes = manifest.totalBytes();
            double publishGbps = bytes / best.publishSeconds() / 1e9;
            StringBuilder all = new StringBuilder();
            for (Measured m : runs) {
                all.append(all.length() == 0 ? "" : ",")
                        .append(String.format(Locale.ROOT, "%.4f", m.publishSeconds()));
            }
            System.out.println(
                    String.format(
                            Locale.ROOT,
                            "{\"model\":\"%s\",\"trainer_nodes\":%d,\"dtype\":\"%s->%s\","
                                    + "\"bytes\":%d,\"publish_s\":%.4f,\"publish_gbps\":%.3f,"
                                    + "\"memcpy_gbps\":%.3f,\"publish_vs_memcpy\":%.3f,"
                                    + "\"network_bytes\":%d,\"publish_s_runs\":[%s],"
                                    + "\"cold_publish_s\":%.4f,\"stage_s\":%.4f,"
                                    + "\"hand_over_s\":%.4f,\"commit_s\":%.4f,"
                                    + "\"services_cpu_s\":%.3f,\"cpu_s\":{%s},\"load_avg\":%.1f,"
                                    + "\"stage_all\":%b,\"staging_mode\":\"%s\","
                                    + "\"max_batch_bytes\":%d,\"generation\":%d}",
                            model,
                            nodes,
                            trainerDtype.wireName(),
                            rolloutDtype.wireName(),
                            bytes,
                            best.publishSeconds(),
                            publishGbps,
                            memcpy,
                            publishGbps / memcpy,
                            network,
                            all,
                            (cold.committedNanos() - cold.firstHandOverNanos()) / 1e9,
                            (best.outcome().firstHandOverNanos() - best.stageStarted()) / 1e9,
                            (best.outcome().finishedNanos() - best.outcome().firstHandOverNanos())
                                    / 1e9,
                            (best.outcome().committedNanos() - best.outcome().finishedNanos())
                                    / 1e9,
                            best.servicesCpu().toNanos() / 1e9,
                            best.cpuByService(),
                            ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
                            stageAll,
                            stagingMode,
                            maxBatch,
                            best.outcome().generation()));
        } catch (RuntimeException e) {
            run.showTails();
            throw e;
        } finally {
            run.close();
            secrets.close();
        }
    }

    /** One measured generation. */
    private record Measured(
            TrainerSession.Outcome outcome,
            long stageStarted,
            long networkBytes,
            double memcpyGbps,
            Duration servicesCpu,
            String cpuByService) {
        double publishSeconds() {
            return (outcome.committedNanos() - outcome.firstHandOverNanos()) / 1e9;
        }
    }

    /** JVM options for one publisher; {@code {node}} becomes its node name. */
    private static List<String> jvmArgs(List<String> options, String node) {
        return options.stream().map(o -> o.replace("{node}", node)).toList();
    }

    private static List<String> concat(List<String> extra, String... fixed) {
        List<String> all = new ArrayList<>(List.of(fixed));
        all.addAll(extra);
        return all;
    }

    private static long tcpBytes(Map<String, PublisherClient> publishers) {
        long total = 0;
        for (PublisherClient p : publishers.values()) {
            TransportCounters c = p.segment().getTransport();
            total += c.getTcpRead() + c.getTcpWritten();
        }
        return total;
    }

    /**
     * Copies as many bytes as each node staged for the measured generation, from the start of its
     * staging file (in segment mode the store segment: stored objects) into one pre-touched
     * destination, once, with the windows the ranks mapped.
     */
    private static double memcpyGbps(
            Map<String, PublisherClient> publishers, TrainerSession.Outcome outcome) {
        long largest = 0;
        for (RankPublisher.Result r : outcome.ranks()) {
            largest = Math.max(largest, r.bytes());
        }
        ByteBuffer destination = ByteBuffer.allocateDirect(Math.toIntExact(largest));
        for (int i = 0; i < destination.capacity(); i += 4096) {
            destination.put(i, (byte) 1);
        }
        long copied = 0;
        long nanos = 0;
        for (RankPublisher.Result r : outcome.ranks()) {
            PublisherClient publisher = publishers.get(r.node());
            long chunk = publisher.stagingInfo().getMaxBatchBytes();
            for (long done = 0; done < r.bytes(); done += chunk) {
                int n = Math.toIntExact(Math.min(chunk, r.bytes() - done));
                ByteBuffer source = publisher.stagingBytes(done, n);
                ByteBuffer target = destination.duplicate().clear().position(Math.toIntExact(done));
                long started = System.nanoTime();
                target.put(source);
                nanos += System.nanoTime() - started;
            }
            copied += r.bytes();
        }
        return copied / (nanos / 1e9) / 1e9;
    }
}
