package io.weightrelay.lab.cluster;

import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.hosts.Host;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.HostProcess;
import io.weightrelay.lab.hosts.LinkCounters;
import io.weightrelay.lab.hosts.ShmIsolation;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.testkit.process.FastStart;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import tools.jackson.databind.JsonNode;

/**
 * The lab on several hosts ({@link HostLab}): Redis (its own redis-server) and control-api each on
 * a host of their own, each publisher with its trainer rank on the host of its trainer node, and
 * the loaders of each rollout node with their engines on the host of that node. The ranks and the
 * engines are {@link HostAgent}s inside those hosts, because they share memory with their service;
 * between hosts there is only the network: REST and Redis on the control network, the Transfer
 * Engine (authenticated with a per-run secret) on the data-plane network, whose interface counters
 * are compared with the bytes the engines count. Everything it started is removed by {@link
 * #close()}. Not thread safe.
 *
 * <p>On {@link DataplaneEngine#MOONCAKE} the services run the real Mooncake instead of the built-in
 * engine ({@link HostsMooncake}): its master on the Redis host's control address, every service's
 * agent inside the service's host with its Transfer Engine on the host's data-plane address, so the
 * store's reads and the Transfer Engine's writes between hosts cross the data-plane network over
 * Mooncake's tcp transport.
 */
public final class MultiHostCluster implements Cluster {

    private static final int REDIS_PORT = 6379;
    private static final int CONTROL_PORT = 8080;
    private static final int PUBLISHER_PORT = 8081;
    private static final int LOADER_PORT = 8082;

    /** Generous: five JVMs start at once on a machine that may have two cores. */
    private static final Duration HEALTHY = Duration.ofMinutes(6);

    /** A tmpfs size is a limit, not an allocation: room for the largest segments a lab makes. */
    private static final long SHM_LIMIT = 16L << 30;

    private final LabCluster.Spec spec;
    private final String prefix;
    private final DataplaneEngine engine;
    private HostsMooncake mooncake;
    private final String run = UUID.randomUUID().toString().substring(0, 8);

    /**
     * Every credential of this run, as a deployment hands them out: a loader token bound to each
     * instance, an owner token bound to each segment; all in files, never on a command line.
     */
    private final LabSecrets secrets;

    /**
     * What each service is told, as in the one-machine lab, about the lab's own Redis; {@link
     * #onHost} adds each host's addresses.
     */
    private final LabServiceArgs args;

    private final Path logs;
    private final Path secretFile;
    private final SourceManifest manifest;
    private final TargetPlacement placement;
    private final List<String> trainerNodes = new ArrayList<>();
    private final List<String> rolloutNodes;
    private final HostLab hosts;
    private final Map<String, HostProcess> loaders = new LinkedHashMap<>();
    private final Map<String, HostProcess> trainerAgents = new LinkedHashMap<>();
    private final Map<String, HostProcess> rolloutAgents = new LinkedHashMap<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private int restarts;
    private volatile boolean installOnRequest;
    private List<String> serviceArgs = List.of();
    private String redisUri;
    private String controlUrl;

    private MultiHostCluster(LabCluster.Spec spec, String prefix, DataplaneEngine engine)
            throws IOException {
        this.spec = spec;
        this.prefix = prefix;
        this.engine = engine;
        this.manifest = LabCatalog.publishedManifest(spec.model());
        this.placement = LabCatalog.placementFor(manifest, spec);
        for (int i = 0; i < spec.trainerNodes(); i++) {
            trainerNodes.add(Topology.trainerNodeName(i));
        }
        LinkedHashSet<String> nodes = new LinkedHashSet<>();
        placement.workers().forEach(w -> nodes.add(w.node()));
        this.rolloutNodes = List.copyOf(nodes);
        this.logs = Files.createTempDirectory(prefix + "-" + run + "-");
        this.secrets = LabSecrets.create(run);
        this.secretFile = secrets.dataplaneSecretFile();
        List<String> names = new ArrayList<>(List.of("redis", "control"));
        names.addAll(trainerNodes);
        names.addAll(rolloutNodes);
        this.hosts = HostLab.create(prefix, names, SHM_LIMIT);
        LabCluster.Site redis =
                new LabCluster.Site(
                        hosts.host("redis").controlAddress(), REDIS_PORT, spec.site().root());
        this.args =
                new LabServiceArgs(
                        spec.on(redis),
                        run,
                        secrets,
                        new LabOptions(true, 1, false, 0, List.of()),
                        LabCatalog.loaderSlots(placement));
    }

    /**
     * Makes the hosts, starts every service and agent, and registers every engine: the lab {@code
     * spec} describes (in one mode; its Redis host and port are not used, the lab runs its own
     * redis-server on a host), on hosts whose names start with {@code prefix} ({@code wr-lab} for
     * the demo).
     */
    public static MultiHostCluster start(LabCluster.Spec spec, String prefix) throws Exception {
        return start(spec, prefix, List.of());
    }

    /**
     * As {@link #start(LabCluster.Spec, String)}, with {@code serviceArgs} ({@code --key=value})
     * given to every service as well: a fault case shortens {@code relay.dataplane.io-timeout} this
     * way.
     */
    public static MultiHostCluster start(
            LabCluster.Spec spec, String prefix, List<String> serviceArgs) throws Exception {
        return start(spec, prefix, serviceArgs, DataplaneEngine.BUILTIN);
    }

    /**
     * As {@link #start(LabCluster.Spec, String, List)}, with every service on {@code engine}: on
     * {@link DataplaneEngine#MOONCAKE} a {@code mooncake_master} of the pinned wheel starts on the
     * Redis host first.
     */
    public static MultiHostCluster start(
            LabCluster.Spec spec, String prefix, List<String> serviceArgs, DataplaneEngine engine)
            throws Exception {
        MultiHostCluster lab = new MultiHostCluster(spec, prefix, engine);
        lab.serviceArgs = List.copyOf(serviceArgs);
        return StartedOrClosed.start(lab, lab::startAll);
    }

    @Override
    public SourceManifest manifest() {
        return manifest;
    }

    @Override
    public TargetPlacement placement() {
        return placement;
    }

    /** The hosts this lab runs on. */
    public HostLab hostLab() {
        return hosts;
    }

    @Override
    public Optional<HostLab> hosts() {
        return Optional.of(hosts);
    }

    @Override
    public LabCluster.Spec spec() {
        return spec;
    }

    /** The data plane every service of this lab runs on. */
    public DataplaneEngine engine() {
        return engine;
    }

    @Override
    public Path logs() {
        return logs;
    }

    /**
     * Every trainer rank publishes its share of the generation of {@code step} into its own
     * publisher; the first rank commits once all succeeded. Returns the generation, how long that
     * took and what crossed the interfaces meanwhile.
     */
    @Override
    public Published publishGeneration(long step) throws Exception {
        LinkCounters before = hosts.counters();
        long started = System.nanoTime();
        HostProcess first = trainerAgents.get(trainerNodes.get(0));
        long generation = first.require("open " + step).get("generation").asLong();
        List<JsonNode> ranks = all(trainerAgents.values(), p -> p.answer("publish " + step));
        List<String> failures = new ArrayList<>();
        for (JsonNode r : ranks) {
            if (!r.path("ok").asBoolean() || r.path("generation").asLong() != generation) {
                failures.add(r.toString());
            }
        }
        if (!failures.isEmpty()) {
            first.answer("abort " + generation);
            throw new IllegalStateException(
                    "generation " + generation + " aborted: " + String.join("; ", failures));
        }
        first.require("commit " + generation);
        return new Published(
                generation,
                (System.nanoTime() - started) / 1e9,
                Optional.of(hosts.counters().minus(before)));
    }

    /**
     * Registers every engine again, its direct workers taking new generations {@code how}: every
     * registration from now on says so.
     */
    @Override
    public void directInstall(DirectInstall how) throws Exception {
        all(rolloutAgents.values(), p -> p.require("register lab " + how.getValue()));
    }

    /**
     * Whether {@link #updateAll} serves through the fetch: each engine starts its update to install
     * on request, follows it to FETCHED, then asks to install (otherwise it updates in one call).
     */
    @Override
    public void installOnRequest(boolean on) {
        installOnRequest = on;
    }

    /** Updates every engine to the active generation, all at once, and checks every byte. */
    @Override
    public LabUpdate updateAll() throws Exception {
        return timed(
                () ->
                        all(
                                rolloutAgents.values(),
                                p -> p.answer(installOnRequest ? "update-serving" : "update")));
    }

    /**
     * Kills instance {@code index}'s loader as a crash would, starts a fresh one on the same host
     * and registers the engine with it in a group of its own; returns the instance id.
     */
    private String restartInstance(int index) throws Exception {
        String id = placement.instances().get(index);
        HostProcess old = loaders.get(id);
        old.kill();
        hosts.forget(old);
        Host host = hosts.host(nodeOf(id));
        int port = LOADER_PORT + 100 + restarts++;
        HostProcess fresh = startLoader(host, id + "-restarted", id, port);
        host.awaitHttp(host.controlAddress(), port, "/actuator/health", HEALTHY, fresh);
        loaders.put(id, fresh);
        rolloutAgents
                .get(host.name())
                .require("replace " + id + " " + url(host, port) + " rebuild-" + id);
        return id;
    }

    @Override
    public List<String> restartInstances(List<Integer> indexes) throws Exception {
        List<String> ids = new ArrayList<>();
        for (int index : indexes) {
            ids.add(restartInstance(index));
        }
        return ids;
    }

    /**
     * Updates the given instances together (restarted ones) and checks every byte they received:
     * the agent of each rollout host updates its own of them at once.
     */
    @Override
    public LabUpdate updateInstances(List<String> instances) throws Exception {
        Map<HostProcess, List<String>> byAgent = new LinkedHashMap<>();
        for (String id : instances) {
            byAgent.computeIfAbsent(rolloutAgents.get(nodeOf(id)), a -> new ArrayList<>()).add(id);
        }
        return timed(
                () ->
                        all(
                                byAgent.keySet(),
                                p -> p.answer("update-one " + String.join(" ", byAgent.get(p)))));
    }

    /**
     * Updates every engine to the active generation, all at once, each session with {@code timeout}
     * as its phase timeout; what each engine ended with, failed or not (every byte of an UPDATED
     * one checked).
     */
    public LabUpdate updateWithin(Duration timeout) throws Exception {
        return timed(
                () ->
                        all(
                                rolloutAgents.values(),
                                p -> p.answer("update-within " + timeout.toSeconds())));
    }

    /** The agents checked every byte as each update ended: this requires that all did. */
    @Override
    public long verify(LabUpdate update, long generation) {
        for (LabUpdate.Engine e : update.requireUpdated().engines()) {
            if (e.progress().getGeneration() != generation) {
                throw new IllegalStateException(
                        e.instance()
                                + " updated to "
                                + e.progress().getGeneration()
                                + ", not "
                                + generation);
            }
        }
        return update.bytesVerified();
    }

    /** The agents' answers to one update, timed, with what crossed the interfaces meanwhile. */
    private LabUpdate timed(Callable<List<JsonNode>> update) throws Exception {
        LinkCounters before = hosts.counters();
        long started = System.nanoTime();
        List<JsonNode> answers = update.call();
        double seconds = (System.nanoTime() - started) / 1e9;
        return new LabUpdate(
                seconds,
                AgentAnswers.engines(answers),
                Optional.of(hosts.counters().minus(before)));
    }

    /**
     * What every engine serves now: generation, paused, and for one serving, whether all its bytes
     * are of that generation ({@code verified}).
     */
    public List<JsonNode> serving() throws Exception {
        return AgentAnswers.listed(all(rolloutAgents.values(), p -> p.require("serving")));
    }

    /** Registers every engine again with its loader in {@code group} (a rebuild). */
    public void registerAll(String group) throws Exception {
        all(rolloutAgents.values(), p -> p.require("register " + group));
    }

    /** The segment of trainer node {@code node}'s publisher. */
    public String segmentOf(String node) {
        return args.segmentName(node);
    }

    /** Removes retired generations nobody holds, as a deployment's scheduled GC would. */
    @Override
    public void collectGarbage() {
        trainerAgents.get(trainerNodes.get(0)).require("gc");
    }

    /** Which process runs where and what shared memory each maps, from {@code /proc}. */
    public ShmIsolation.Report isolation() {
        return ShmIsolation.check(hosts);
    }

    /** Prints every process's log tail to stderr (after a failure). */
    @Override
    public void dumpLogs() {
        for (HostProcess p : hosts.processes()) {
            System.err.println("---- " + p.name() + " (" + p.host().name() + ") ----\n" + p.tail());
        }
    }

    /** Stops everything and removes every host. */
    @Override
    public void close() {
        pool.shutdownNow();
        hosts.close();
        if (mooncake != null) {
            mooncake.removeSockets();
        }
        secrets.close();
        ServiceProcess.deleteTmpDirs(logs);
    }

    /** Every token and secret this lab configured: none may appear in a log. */
    @Override
    public List<String> configuredSecrets() {
        return secrets.all();
    }

    private void startAll() throws Exception {
        Host redisHost = hosts.host("redis");
        redisUri = redisHost.startRedis(REDIS_PORT, logs);
        if (engine == DataplaneEngine.MOONCAKE) {
            mooncake =
                    HostsMooncake.start(
                            redisHost, spec.site().root().resolve("python").resolve("src"), logs);
        }

        Host controlHost = hosts.host("control");
        controlUrl = url(controlHost, CONTROL_PORT);
        List<String> controlArgs =
                onHost(controlHost, args.controlApi(0, args.controlApiSecretsArg()));
        HostProcess control =
                startService(
                        controlHost,
                        "control-api",
                        "control-api",
                        "512m",
                        CONTROL_PORT,
                        controlArgs);

        Map<HostProcess, Integer> services = new LinkedHashMap<>();
        services.put(control, CONTROL_PORT);
        long[] sizes = LabCatalog.publisherSizes(manifest, spec.trainerNodes());
        long segment = sizes[0];
        long staging = sizes[1];
        for (String node : trainerNodes) {
            Host h = hosts.host(node);
            List<String> publisherArgs =
                    new ArrayList<>(args.publisher(node, segment, staging, controlUrl));
            publisherArgs.add("--relay.segment.admin-url=" + url(h, PUBLISHER_PORT));
            services.put(
                    startService(
                            h,
                            "publisher-" + node,
                            "publisher-service",
                            "384m",
                            PUBLISHER_PORT,
                            onHost(h, publisherArgs)),
                    PUBLISHER_PORT);
        }
        Map<String, List<String>> enginesOfNode = new LinkedHashMap<>();
        for (String node : rolloutNodes) {
            Host h = hosts.host(node);
            List<String> engines = new ArrayList<>();
            int k = 0;
            for (String id : placement.instances()) {
                if (!nodeOf(id).equals(node)) {
                    continue;
                }
                int port = LOADER_PORT + k++;
                HostProcess loader = startLoader(h, id, id, port);
                loaders.put(id, loader);
                services.put(loader, port);
                engines.add(id + "=" + url(h, port));
            }
            enginesOfNode.put(node, engines);
        }
        for (Map.Entry<HostProcess, Integer> s : services.entrySet()) {
            Host h = s.getKey().host();
            h.awaitHttp(h.controlAddress(), s.getValue(), "/actuator/health", HEALTHY, s.getKey());
        }

        for (String node : trainerNodes) {
            Host h = hosts.host(node);
            trainerAgents.put(
                    node,
                    h.startJava(
                            "trainer-rank-" + node,
                            "256m",
                            HostAgent.class,
                            List.of(
                                    "--role",
                                    "trainer",
                                    "--model",
                                    spec.model(),
                                    "--node",
                                    node,
                                    "--nodes",
                                    String.join(",", trainerNodes),
                                    "--control-url",
                                    controlUrl,
                                    "--publisher-url",
                                    url(h, PUBLISHER_PORT),
                                    "--tokens-file",
                                    secrets.agentTokens(
                                                    "trainer-rank-" + node,
                                                    Map.of(
                                                            "trainer",
                                                            secrets.trainer(),
                                                            "operator",
                                                            secrets.operator()))
                                            .toString(),
                                    "--seed",
                                    Long.toString(spec.seed())),
                            logs));
        }
        for (String node : rolloutNodes) {
            Host h = hosts.host(node);
            List<String> args =
                    new ArrayList<>(
                            List.of(
                                    "--role",
                                    "rollout",
                                    "--model",
                                    spec.model(),
                                    "--instances",
                                    Integer.toString(spec.instances()),
                                    "--tp",
                                    Integer.toString(spec.tp()),
                                    "--mode",
                                    spec.mode().name().toLowerCase(java.util.Locale.ROOT),
                                    "--rollout-nodes",
                                    Integer.toString(spec.rolloutNodes()),
                                    "--control-url",
                                    controlUrl,
                                    "--tokens-file",
                                    secrets.agentTokens(
                                                    "rollout-engines-" + node, loaderTokens(node))
                                            .toString(),
                                    "--seed",
                                    Long.toString(spec.seed())));
            for (String e : enginesOfNode.get(node)) {
                args.add("--engine");
                args.add(e);
            }
            rolloutAgents.put(
                    node,
                    h.startJava("rollout-engines-" + node, "256m", HostAgent.class, args, logs));
        }
        all(rolloutAgents.values(), p -> p.require("register lab"));
    }

    /**
     * The arguments {@code own} of a service on {@code h} with what only the multi-host lab adds:
     * its engine binds and advertises the host's data-plane address (on Mooncake, its agent too),
     * and the flags {@link #start(LabCluster.Spec, String, List)} gives every service.
     */
    private List<String> onHost(Host h, List<String> own) {
        List<String> out = new ArrayList<>(own);
        out.add("--relay.dataplane.bind-host=" + h.dataAddress());
        if (mooncake != null) {
            out.addAll(mooncake.serviceArgs(h));
        }
        out.addAll(serviceArgs);
        return out;
    }

    /** The loader token of every instance on {@code node}, as {@code loader.<instance>}. */
    private Map<String, String> loaderTokens(String node) {
        Map<String, String> tokens = new LinkedHashMap<>();
        for (String id : placement.instances()) {
            if (nodeOf(id).equals(node)) {
                tokens.put("loader." + id, secrets.loader(id));
            }
        }
        return tokens;
    }

    /**
     * Instance {@code instance}'s loader on {@code h}. Unlike the one-machine lab's ({@link
     * LabServiceArgs#loader}) it keeps the service's default lease (2 minutes; no multi-host case
     * waits for a dead loader's lease to lapse) and sets no node label at start: its data plane
     * opens as its host's engine registers.
     */
    private HostProcess startLoader(Host h, String name, String instance, int port) {
        List<String> loaderArgs = new ArrayList<>(args.loaderBase(name, instance, controlUrl));
        loaderArgs.add("--relay.loader.advertise-url=" + url(h, port));
        return startService(
                h, "loader-" + name, "loader-service", "384m", port, onHost(h, loaderArgs));
    }

    private HostProcess startService(
            Host h, String name, String module, String heap, int port, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(java());
        command.add("-Xmx" + heap);
        command.add("-XX:+UseSerialGC");
        // C1 only: the services start in half the CPU time, and their hot paths are native.
        command.add("-XX:TieredStopAtLevel=1");
        // Its own temporary directory (embedded Tomcat leaves two in it per start), removed at
        // close.
        try {
            command.add("-Djava.io.tmpdir=" + ServiceProcess.tmpDir(logs, name));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the temporary directory of " + name, e);
        }
        command.addAll(FastStart.jarArgs(ServiceProcess.findJar(spec.site().root(), module)));
        command.add("--server.port=" + port);
        command.add("--server.address=" + h.controlAddress());
        command.add(ServiceProcess.parentPidArg());
        command.addAll(args);
        return h.start(name, command, logs);
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static String url(Host h, int port) {
        return "http://" + h.controlAddress() + ":" + port;
    }

    private String nodeOf(String instance) {
        return placement.workers().stream()
                .filter(w -> w.instance().equals(instance))
                .findFirst()
                .map(Worker::node)
                .orElseThrow();
    }

    /** The lab's Redis ({@code redis://<address>:6379} on the control network). */
    public String redisUri() {
        return redisUri;
    }

    /** The file holding the run's data-plane secret (mode 0600), as every service reads it. */
    public Path dataplaneSecretFile() {
        return secretFile;
    }

    /** The names of the rollout nodes, each a host of its own, in placement order. */
    public List<String> rolloutNodes() {
        return rolloutNodes;
    }

    /** The data-plane key prefix of this lab's store (segments and object directory). */
    public String dataplanePrefix() {
        return args.dataplanePrefix();
    }

    private interface Call {
        JsonNode apply(HostProcess p) throws Exception;
    }

    /** Asks every agent at once and returns their answers in order. */
    private List<JsonNode> all(Iterable<HostProcess> agents, Call call) throws Exception {
        List<Future<JsonNode>> futures = new ArrayList<>();
        for (HostProcess p : agents) {
            Callable<JsonNode> task = () -> call.apply(p);
            futures.add(pool.submit(task));
        }
        List<JsonNode> out = new ArrayList<>();
        for (Future<JsonNode> f : futures) {
            try {
                out.add(f.get());
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof Exception ex) {
                    throw ex;
                }
                throw e;
            }
        }
        return out;
    }
}
