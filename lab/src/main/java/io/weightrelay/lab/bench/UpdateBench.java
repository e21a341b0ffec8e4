package io.weightrelay.lab.bench;

import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.TransportBytes;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.lab.cluster.ServiceProcess;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.lab.rollout.ShmVerifier;
import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TrainerSession;
import io.weightrelay.trainer.sim.Args;
import io.weightrelay.trainer.sim.DeterministicWeights;
import io.weightrelay.trainer.sim.SimulatedTrainer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * {@code ./relay bench update --model qwen2.5-0.5b --instances 4 --tp 2 --mode compat|direct}:
 * control-api, one publisher-service per trainer node (two node labels) and one loader-service per
 * engine instance (two rollout node labels, instances packed in order) as child JVMs; the simulated
 * trainer publishes, the simulated engines register and update once cold (segments are created and
 * pre-faulted), then {@code --warmup} (2) more publish-and-update rounds let the JIT settle, and
 * the last round is measured. Every byte of the measured generation is then checked ({@code
 * --no-verify} skips that). One JSON line:
 *
 * <ul>
 *   <li>{@code bytes_delivered}: bytes landing in worker buffers (pushes and fan-outs)
 *   <li>{@code local_bytes}, {@code tcp_bytes}: what the loaders' engines moved during the apply,
 *       store reads included, per transport
 *   <li>{@code update_s}: first update request to the last engine seeing {@code UPDATED}
 *   <li>{@code bound_s}: local bytes at the memcpy rate plus tcp bytes at the plain loopback socket
 *       rate, both measured in this run; {@code update_vs_bound} = bound / update
 *   <li>{@code store_read_ratio}: store bytes the loaders read / bytes the target needs
 *   <li>{@code naive_update_s}: every worker reading everything it needs from the store itself, all
 *       at once, in this run
 * </ul>
 */
public final class UpdateBench {
    private static final String TRAINER_TOKEN = "bench-trainer-" + UUID.randomUUID();
    private static final String LOADER_TOKEN = "bench-loader-" + UUID.randomUUID();
    private static final String OPERATOR_TOKEN = "bench-operator-" + UUID.randomUUID();
    private static final long MAX_FRAGMENT = Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES;
    private static final long MAX_BATCH = 128L << 20;
    private static final int TRAINER_NODES = 2;
    private static final int ROLLOUT_NODES = 2;

    private UpdateBench() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        String model = args.get("model", "qwen2.5-0.5b");
        int instances = args.getInt("instances", 4);
        int tp = args.getInt("tp", 2);
        Mode mode = Mode.parse(args.get("mode", "compat"));
        long seed = args.getLong("seed", 1);
        boolean verify = !args.has("no-verify");
        int warmups = args.getInt("warmup", 2);
        Path root = Path.of(args.get("root", ServiceProcess.home().toString())).toAbsolutePath();
        String redisHost = args.get("redis-host", "127.0.0.1");
        int redisPort = args.getInt("redis-port", 6379);
        String redisUri = "redis://" + redisHost + ":" + redisPort;

        SourceManifest manifest =
                SimulatedTrainer.manifest(model, DType.BF16, DType.BF16, MAX_FRAGMENT);
        TargetPlacement placement =
                Placements.of(ModelCatalog.layout(model), ROLLOUT_NODES, instances, tp, 1, mode, 1);
        Topology topology = Topology.uniform(TRAINER_NODES, ROLLOUT_NODES, 1, 100);
        long needed = storeBytesNeeded(Planner.plan(manifest, placement, topology));

        String run = UUID.randomUUID().toString().substring(0, 8);
        String dpPrefix = "wr:bench:" + run + ":dp:";
        Path logs = Files.createTempDirectory("wr-bench-update-" + run);
        List<ServiceProcess> children = new ArrayList<>();
        try {
            ServiceProcess control =
                    ServiceProcess.start(
                            "control-api",
                            ServiceProcess.findJar(root, "control-api"),
                            "512m",
                            List.of(
                                    "--spring.data.redis.host=" + redisHost,
                                    "--spring.data.redis.port=" + redisPort,
                                    "--relay.redis.key-prefix=wr:bench:" + run + ":",
                                    "--relay.store.key-prefix=" + dpPrefix,
                                    "--relay.generations.scheduled-gc=false",
                                    "--relay.security.tokens.trainer[0]=" + TRAINER_TOKEN,
                                    "--relay.security.tokens.loader[0]=" + LOADER_TOKEN,
                                    "--relay.security.tokens.operator[0]=" + OPERATOR_TOKEN),
                            logs);
            children.add(control);
            Map<String, ServiceProcess> publishers =
                    startPublishers(root, manifest, run, dpPrefix, redisUri, control, logs);
            children.addAll(publishers.values());
            List<ServiceProcess> loaders = new ArrayList<>();
            for (String instance : placement.instances()) {
                ServiceProcess loader =
                        ServiceProcess.start(
                                "loader-" + instance,
                                ServiceProcess.findJar(root, "loader-service"),
                                "384m",
                                List.of(
                                        "--relay.loader.control-url=" + control.baseUrl(),
                                        "--relay.loader.token=" + LOADER_TOKEN,
                                        "--relay.loader.redis-uri=" + redisUri,
                                        "--relay.loader.key-prefix=" + dpPrefix,
                                        "--relay.security.tokens.loader[0]=" + LOADER_TOKEN),
                                logs);
                loaders.add(loader);
                children.add(loader);
            }
            for (ServiceProcess c : children) {
                c.awaitHealthy(Duration.ofMinutes(3));
            }

            Map<String, PublisherClient> clients = new LinkedHashMap<>();
            publishers.forEach(
                    (node, p) ->
                            clients.put(
                                    node,
                                    PublisherClient.connect(
                                            p.baseUrl(), TRAINER_TOKEN, Duration.ofMinutes(5))));
            TrainerSession trainer =
                    new TrainerSession(
                            new RestCoordinator(
                                    control.baseUrl(),
                                    TRAINER_TOKEN,
                                    Duration.ofMinutes(2),
                                    MAX_FRAGMENT),
                            clients,
                            new RankPublisher.Options(true, 2, true, Duration.ofMinutes(2)));
            trainer.publish(manifest, 0, g -> new DeterministicWeights(seed, g));

            List<RolloutEngine> engines = new ArrayList<>();
            List<String> ids = placement.instances();
            for (int i = 0; i < ids.size(); i++) {
                String id = ids.get(i);
                RolloutEngine engine =
                        new RolloutEngine(id, loaders.get(i).baseUrl(), LOADER_TOKEN);
                String node =
                        placement.workers().stream()
                                .filter(w -> w.instance().equals(id))
                                .findFirst()
                                .orElseThrow()
                                .node();
                engine.register(
                        model, "bench", node, RolloutEngine.workers(placement, id, manifest));
                engines.add(engine);
            }
            Updates cold = update(engines);
            cold.requireUpdated(children);
            // The store allocates in any segment once the publishers' own are full (receive
            // segments included, see the loader's notes), so retired generations are collected
            // after every round, as a deployment's scheduled GC would.
            io.weightrelay.api.control.client.invoker.ApiClient operator =
                    new io.weightrelay.api.control.client.invoker.ApiClient();
            operator.setBasePath(control.baseUrl());
            operator.setBearerToken(OPERATOR_TOKEN);
            io.weightrelay.api.control.client.GenerationsApi generations =
                    new io.weightrelay.api.control.client.GenerationsApi(operator);
            // Warm-up rounds let the services' JIT settle; the last round is the measured one.
            generations.collectGarbage(model);
            long generation = 0;
            Updates warm = null;
            for (int round = 0; round <= warmups; round++) {
                long step = round + 1;
                generation =
                        trainer.publish(manifest, step, g -> new DeterministicWeights(seed, g))
                                .generation();
                warm = update(engines);
                warm.requireUpdated(children);
                generations.collectGarbage(model);
            }

            long verified = 0;
            if (verify) {
                for (RolloutEngine e : engines) {
                    InstanceStatus status = e.status();
                    verified += new ShmVerifier(manifest, seed, generation).verify(status);
                }
            }

            long delivered = 0;
            long local = 0;
            long tcp = 0;
            long storeRead = 0;
            for (UpdateProgress p : warm.results) {
                delivered += p.getBytesReceived();
                TransportBytes t = p.getTransport();
                local += t.getLocalRead() + t.getLocalWritten();
                tcp += t.getTcpRead() + t.getTcpWritten();
                storeRead += t.getLocalRead() + t.getTcpRead();
            }
            long prepareMs = 0;
            long applyMs = 0;
            long postMs = 0;
            for (UpdateProgress p : warm.results) {
                prepareMs = Math.max(prepareMs, nz(p.getDurations().getPrepareMs()));
                applyMs = Math.max(applyMs, nz(p.getDurations().getApplyMs()));
                postMs = Math.max(postMs, nz(p.getDurations().getPostApplyMs()));
            }
            double memcpy = memcpyBytesPerSecond();
            double socket = loopbackBytesPerSecond();
            double bound = local / memcpy + tcp / socket;
            double naive =
                    naiveSeconds(manifest, placement, topology, redisUri, dpPrefix, generation);
            System.out.println(
                    String.format(
                            Locale.ROOT,
                            "{\"model\":\"%s\",\"mode\":\"%s\",\"instances\":%d,\"tp\":%d,"
                                    + "\"generation\":%d,\"bytes_delivered\":%d,\"local_bytes\":%d,"
                                    + "\"tcp_bytes\":%d,\"update_s\":%.4f,\"bound_s\":%.4f,"
                                    + "\"update_vs_bound\":%.3f,\"store_read_ratio\":%.4f,"
                                    + "\"naive_update_s\":%.4f,\"cold_update_s\":%.4f,"
                                    + "\"memcpy_gbps\":%.3f,\"tcp_gbps\":%.3f,\"bytes_verified\":%d,"
                                    + "\"prepare_ms\":%d,\"apply_ms\":%d,\"post_apply_ms\":%d}",
                            model,
                            mode.name().toLowerCase(Locale.ROOT),
                            instances,
                            tp,
                            generation,
                            delivered,
                            local,
                            tcp,
                            warm.seconds,
                            bound,
                            bound / warm.seconds,
                            (double) storeRead / needed,
                            naive,
                            cold.seconds,
                            memcpy / 1e9,
                            socket / 1e9,
                            verified,
                            prepareMs,
                            applyMs,
                            postMs));
        } catch (RuntimeException | AssertionError e) {
            for (ServiceProcess c : children) {
                System.err.println("---- " + c.name() + " ----\n" + c.tail());
            }
            throw e;
        } finally {
            for (ServiceProcess c : children) {
                c.close();
            }
        }
    }

    private static Map<String, ServiceProcess> startPublishers(
            Path root,
            SourceManifest manifest,
            String run,
            String dpPrefix,
            String redisUri,
            ServiceProcess control,
            Path logs) {
        List<Node> trainers = new ArrayList<>();
        for (int i = 0; i < TRAINER_NODES; i++) {
            trainers.add(new Node(Topology.trainerNodeName(i), Role.TRAINER, 1, 100));
        }
        long maxNodeBytes = 0;
        for (long b : PublisherAssignment.assign(manifest, new Topology(trainers)).bytesPerNode()) {
            maxNodeBytes = Math.max(maxNodeBytes, b);
        }
        long staging = roundUp(maxNodeBytes + (64L << 20) + MAX_BATCH);
        long segment = roundUp(2 * maxNodeBytes + (64L << 20));
        Map<String, ServiceProcess> out = new LinkedHashMap<>();
        for (int i = 0; i < TRAINER_NODES; i++) {
            String node = Topology.trainerNodeName(i);
            out.put(
                    node,
                    ServiceProcess.start(
                            "publisher-" + node,
                            ServiceProcess.findJar(root, "publisher-service"),
                            "384m",
                            List.of(
                                    "--relay.segment.node=" + node,
                                    "--relay.segment.name=bench-" + run + "-" + node,
                                    "--relay.segment.size=" + segment + "B",
                                    "--relay.segment.redis-uri=" + redisUri,
                                    "--relay.segment.key-prefix=" + dpPrefix,
                                    "--relay.staging.path=/dev/shm/wr-bench-staging-"
                                            + run
                                            + "-"
                                            + i,
                                    "--relay.staging.capacity=" + staging + "B",
                                    "--relay.staging.max-batch-bytes=" + MAX_BATCH + "B",
                                    "--relay.publish.control-api-url=" + control.baseUrl(),
                                    "--relay.publish.control-api-token=" + TRAINER_TOKEN,
                                    "--relay.security.tokens.trainer[0]=" + TRAINER_TOKEN,
                                    "--relay.security.tokens.operator[0]=" + OPERATOR_TOKEN),
                            logs));
        }
        return out;
    }

    /** One update of every engine, started together; the time until the last one is done. */
    private record Updates(double seconds, List<UpdateProgress> results) {
        void requireUpdated(List<ServiceProcess> children) {
            for (UpdateProgress p : results) {
                if (p.getOutcome() != UpdateOutcome.UPDATED) {
                    throw new IllegalStateException(
                            "update "
                                    + p.getUpdateId()
                                    + " ended "
                                    + p.getOutcome()
                                    + ": "
                                    + p.getError()
                                    + " ("
                                    + p.getFailingPeer()
                                    + ")");
                }
            }
        }
    }

    private static Updates update(List<RolloutEngine> engines) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(engines.size());
        try {
            long started = System.nanoTime();
            List<Future<UpdateProgress>> futures = new ArrayList<>();
            for (RolloutEngine e : engines) {
                futures.add(
                        pool.submit(
                                () ->
                                        e.await(
                                                e.start(null, Duration.ofMinutes(10)).getUpdateId(),
                                                Duration.ofMillis(10))));
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

    private static long storeBytesNeeded(Plan plan) {
        long bytes = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            bytes += plan.readBytes(i);
        }
        return bytes;
    }

    /** One thread copying warm memory: the yardstick of local bytes. */
    private static double memcpyBytesPerSecond() {
        int size = 256 << 20;
        ByteBuffer from = ByteBuffer.allocateDirect(size);
        ByteBuffer to = ByteBuffer.allocateDirect(size);
        for (int i = 0; i < size; i += 4096) {
            from.put(i, (byte) i);
            to.put(i, (byte) 0);
        }
        double best = 0;
        for (int round = 0; round < 4; round++) {
            long started = System.nanoTime();
            to.clear().put(from.clear());
            best = Math.max(best, size / ((System.nanoTime() - started) / 1e9));
        }
        return best;
    }

    /** One plain loopback TCP stream, 4 MiB writes: the yardstick of tcp bytes. */
    private static double loopbackBytesPerSecond() throws Exception {
        long total = 1L << 30;
        int chunk = 4 << 20;
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            Thread writer =
                    new Thread(
                            () -> {
                                try (SocketChannel out =
                                        SocketChannel.open(server.getLocalAddress())) {
                                    ByteBuffer buf = ByteBuffer.allocateDirect(chunk);
                                    for (long sent = 0; sent < total; sent += chunk) {
                                        buf.clear();
                                        while (buf.hasRemaining()) {
                                            out.write(buf);
                                        }
                                    }
                                } catch (IOException e) {
                                    throw new java.io.UncheckedIOException(e);
                                }
                            });
            writer.start();
            try (SocketChannel in = server.accept()) {
                ByteBuffer buf = ByteBuffer.allocateDirect(chunk);
                long received = 0;
                long started = System.nanoTime();
                while (received < total) {
                    buf.clear();
                    int n = in.read(buf);
                    if (n < 0) {
                        break;
                    }
                    received += n;
                }
                double rate = received / ((System.nanoTime() - started) / 1e9);
                writer.join();
                return rate;
            }
        }
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
                                                .build()));
                plans.add(Planner.plan(manifest, new TargetPlacement(List.of(w)), topology));
            }
            long started = System.nanoTime();
            List<Future<Long>> futures = new ArrayList<>();
            for (int k = 0; k < plans.size(); k++) {
                Plan plan = plans.get(k);
                Dataplane dp = planes.get(placement.workers().get(k).node());
                futures.add(pool.submit(() -> readAll(dp, plan, manifest.model(), generation)));
            }
            for (Future<Long> f : futures) {
                f.get();
            }
            return (System.nanoTime() - started) / 1e9;
        } finally {
            pool.shutdownNow();
            for (Dataplane dp : planes.values()) {
                dp.close();
            }
        }
    }

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
                String key = ObjectKeys.key(model, generation, plan.objectId(plan.readObject(i)));
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

    private static long nz(Long value) {
        return value == null ? 0 : value;
    }

    private static long roundUp(long bytes) {
        long mib = 1L << 20;
        return (bytes + mib - 1) / mib * mib;
    }
}
