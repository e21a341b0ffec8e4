package io.weightrelay.lab.cluster;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.Args;
import io.weightrelay.lab.hosts.Agent;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.lab.rollout.ShmVerifier;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.trainer.client.Coordinator;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * What runs beside a service inside its host in the multi-host lab, driven by {@link
 * MultiHostCluster} over stdin (one command a line) and answering one JSON object a line on stdout
 * (logs go to stderr). It is the simulated trainer rank of a trainer host, writing into its
 * publisher's segment over the host's own shared memory, or the simulated rollout engines of a
 * rollout host, registering with their loaders and checking every byte in their receive buffers.
 *
 * <pre>
 * --role trainer --model M --node N --nodes N,N,... --control-url U --publisher-url U
 *     --tokens-file F [--seed 1]
 *   open STEP | publish STEP | commit G | abort G | gc
 * --role rollout --model M --instances I --tp P --mode compat|direct --rollout-nodes R
 *     --control-url U --tokens-file F --engine ID=URL ... [--seed 1]
 *   register GROUP | update | replace ID URL GROUP | update-one ID [ID ...]
 * </pre>
 */
public final class HostAgent {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private HostAgent() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        Agent agent = Agent.claimStdout();
        Role role =
                switch (args.get("role", "")) {
                    case "trainer" -> new TrainerRank(args);
                    case "rollout" -> new Engines(args);
                    default -> throw new IllegalArgumentException("--role trainer|rollout");
                };
        agent.serve(words -> JSON.writeValueAsString(role.handle(words)));
    }

    private interface Role {
        ObjectNode handle(String[] words) throws Exception;
    }

    private static ObjectNode ok() {
        return JSON.createObjectNode().put("ok", true);
    }

    /** One trainer node's rank: opens (idempotent by step), publishes its share, commits. */
    private static final class TrainerRank implements Role {
        private final String model;
        private final String node;
        private final List<String> nodes;
        private final long seed;
        private final SourceManifest manifest;
        private final Coordinator coordinator;
        private final PublisherClient publisher;
        private final GenerationsApi operator;

        TrainerRank(Args args) {
            model = args.get("model", "tiny");
            node = args.get("node", "");
            nodes = List.of(args.get("nodes", node).split(","));
            seed = args.seed();
            manifest = LabCatalog.publishedManifest(model);
            String control = args.get("control-url", "");
            Map<String, String> tokens =
                    LabSecrets.readTokens(Path.of(args.get("tokens-file", "")));
            String token = tokens.getOrDefault("trainer", "");
            coordinator =
                    new RestCoordinator(
                            control,
                            token,
                            Duration.ofMinutes(2),
                            Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES);
            publisher =
                    PublisherClient.connect(
                            args.get("publisher-url", ""), token, Duration.ofMinutes(5));
            Endpoint operatorEndpoint =
                    Endpoint.of(control, tokens.getOrDefault("operator", token));
            operator = new GenerationsApi(RelayClients.of(operatorEndpoint).control());
        }

        @Override
        public ObjectNode handle(String[] w) {
            return switch (w[0]) {
                case "open" ->
                        ok().put(
                                        "generation",
                                        coordinator
                                                .open(manifest, nodes, Long.parseLong(w[1]))
                                                .generation());
                case "publish" -> publish(Long.parseLong(w[1]));
                case "commit" -> {
                    coordinator.commit(new GenerationId(model, Long.parseLong(w[1])));
                    yield ok();
                }
                case "abort" -> {
                    coordinator.abort(
                            new GenerationId(model, Long.parseLong(w[1])), "a trainer rank failed");
                    yield ok();
                }
                case "gc" -> {
                    operator.collectGarbage(model);
                    yield ok();
                }
                default -> throw new IllegalArgumentException("unknown command " + w[0]);
            };
        }

        private ObjectNode publish(long step) {
            Coordinator.OpenedGeneration opened = coordinator.open(manifest, nodes, step);
            long generation = opened.generation();
            RankPublisher rank =
                    new RankPublisher(
                            publisher,
                            node,
                            new RankPublisher.Options(2, false, Duration.ofMinutes(2)));
            RankPublisher.Result r =
                    rank.publish(
                            manifest,
                            generation,
                            opened.nodeOfTensor(),
                            new DeterministicWeights(seed, generation));
            ObjectNode answer =
                    JSON.createObjectNode()
                            .put("ok", r.ok())
                            .put("generation", generation)
                            .put("bytes", r.bytes())
                            .put("batches", r.batches());
            if (!r.ok()) {
                answer.put("error", r.failure());
            }
            return answer;
        }
    }

    /** The rollout engines of one host, one per loader-service of the host. */
    private static final class Engines implements Role {
        private final String model;
        private final long seed;
        private final Map<String, String> tokens;
        private final SourceManifest manifest;
        private final TargetPlacement placement;
        private final Map<String, RolloutEngine> engines = new LinkedHashMap<>();
        private final ExecutorService pool = Executors.newCachedThreadPool();

        /** How the direct workers take a new generation; said by every registration. */
        private DirectInstall directInstall = DirectInstall.IN_PLACE;

        /** Whether the update running now serves through the fetch ({@code update-serving}). */
        private volatile boolean installOnRequest;

        /**
         * The instances whose last update did not end UPDATED: they serve what they loaded before,
         * not what that update may have left in their receive buffers.
         */
        private final Set<String> failedLast = ConcurrentHashMap.newKeySet();

        Engines(Args args) {
            model = args.get("model", "tiny");
            seed = args.seed();
            tokens = LabSecrets.readTokens(Path.of(args.get("tokens-file", "")));
            manifest = LabCatalog.publishedManifest(model);
            LabCluster.Spec spec =
                    LabCluster.Spec.rolloutOnly(
                            model,
                            args.getInt("instances", 2),
                            args.getInt("tp", 1),
                            args.mode(),
                            args.getInt("rollout-nodes", 2));
            placement = LabCatalog.placementFor(manifest, spec);
            for (String e : args.all("engine")) {
                String[] kv = e.split("=", 2);
                engines.put(kv[0], new RolloutEngine(kv[0], kv[1], token(kv[0])));
            }
        }

        /** The loader token bound to {@code instance}. */
        private String token(String instance) {
            String token = tokens.get("loader." + instance);
            if (token == null) {
                throw new IllegalArgumentException("no loader token for instance " + instance);
            }
            return token;
        }

        @Override
        public ObjectNode handle(String[] w) throws Exception {
            return switch (w[0]) {
                case "register" -> {
                    if (w.length > 2) {
                        directInstall = DirectInstall.fromValue(w[2]);
                    }
                    for (RolloutEngine e : engines.values()) {
                        register(e, w[1]);
                    }
                    yield ok();
                }
                case "replace" -> {
                    RolloutEngine e = new RolloutEngine(w[1], w[2], token(w[1]));
                    register(e, w[3]);
                    engines.put(w[1], e);
                    yield ok();
                }
                case "update" -> update(List.copyOf(engines.values()), Duration.ofMinutes(10));
                case "update-serving" -> {
                    installOnRequest = true;
                    try {
                        yield update(List.copyOf(engines.values()), Duration.ofMinutes(10));
                    } finally {
                        installOnRequest = false;
                    }
                }
                case "update-one" -> {
                    List<RolloutEngine> which = new ArrayList<>();
                    for (int i = 1; i < w.length; i++) {
                        which.add(engines.get(w[i]));
                    }
                    yield update(which, Duration.ofMinutes(10));
                }
                case "update-within" ->
                        update(
                                List.copyOf(engines.values()),
                                Duration.ofSeconds(Long.parseLong(w[1])));
                case "serving" -> serving();
                default -> throw new IllegalArgumentException("unknown command " + w[0]);
            };
        }

        private void register(RolloutEngine e, String group) {
            String node =
                    placement.workers().stream()
                            .filter(x -> x.instance().equals(e.instance()))
                            .findFirst()
                            .map(Worker::node)
                            .orElseThrow();
            e.register(
                    model,
                    group,
                    node,
                    null,
                    RolloutEngine.workers(placement, e.instance(), manifest),
                    directInstall);
        }

        /**
         * Starts {@code e}'s update; installing on request, the engine serves through the fetch,
         * then asks to install once its group fetched (as {@code SimulatedEngines} does on one
         * machine). Returns the update's id.
         */
        private String start(RolloutEngine e, Duration timeout) {
            if (!installOnRequest) {
                return e.start(null, timeout).getUpdateId();
            }
            String id = e.startServing(null, timeout).getUpdateId();
            if (e.awaitFetched(id, Duration.ofSeconds(10)).getPhase() == UpdatePhase.FETCHED) {
                e.install(id);
            }
            return id;
        }

        /** Updates the engines together, then checks every byte each one received. */
        private ObjectNode update(List<RolloutEngine> which, Duration timeout) throws Exception {
            List<Future<UpdateProgress>> futures = new ArrayList<>();
            long started = System.nanoTime();
            long[] done = new long[which.size()];
            for (int i = 0; i < which.size(); i++) {
                RolloutEngine e = which.get(i);
                int k = i;
                futures.add(
                        pool.submit(
                                () -> {
                                    UpdateProgress p =
                                            e.await(start(e, timeout), Duration.ofSeconds(10));
                                    done[k] = System.nanoTime();
                                    return p;
                                }));
            }
            ObjectNode answer = ok();
            ArrayNode list = answer.putArray("engines");
            boolean all = true;
            for (int i = 0; i < which.size(); i++) {
                RolloutEngine e = which.get(i);
                UpdateProgress p = futures.get(i).get();
                // The loader's whole report, as it answered it (AgentAnswers reads it back), and
                // from the command to the engine seeing its outcome, before the check of its
                // bytes below.
                ObjectNode o =
                        list.addObject()
                                .put("instance", e.instance())
                                .put("updated_s", (done[i] - started) / 1e9)
                                .set("progress", JSON.valueToTree(p));
                long verified = 0;
                String problem = null;
                if (p.getOutcome() == UpdateOutcome.UPDATED) {
                    failedLast.remove(e.instance());
                    try {
                        verified =
                                new ShmVerifier(manifest, seed, p.getGeneration())
                                        .verify(e.status());
                    } catch (AssertionError | RuntimeException ex) {
                        problem = "verification failed: " + ex.getMessage();
                    }
                } else {
                    failedLast.add(e.instance());
                    problem = LabUpdate.Engine.failure(p);
                }
                o.put("bytes_verified", verified).put("verified", problem == null);
                if (problem != null) {
                    o.put("error", problem);
                    all = false;
                }
            }
            return answer.put("ok", all);
        }

        /**
         * What each engine serves now: its generation and whether it is paused, and for one that
         * serves (not paused), whether every byte it serves is of the generation it reports: all it
         * received after an update that ended UPDATED, else what it serves from ({@link
         * ShmVerifier#verifyServing}: a compat engine loads its image only at UPDATED).
         */
        private ObjectNode serving() {
            ObjectNode answer = ok();
            ArrayNode list = answer.putArray("engines");
            for (RolloutEngine e : engines.values()) {
                InstanceStatus status = e.status();
                ObjectNode o =
                        list.addObject()
                                .put("instance", e.instance())
                                .put("paused", Boolean.TRUE.equals(status.getPaused()));
                if (status.getGeneration() != null) {
                    o.put("generation", status.getGeneration());
                }
                if (!Boolean.TRUE.equals(status.getPaused()) && status.getGeneration() != null) {
                    try {
                        ShmVerifier verifier =
                                new ShmVerifier(manifest, seed, status.getGeneration());
                        o.put(
                                "bytes_verified",
                                failedLast.contains(e.instance())
                                        ? verifier.verifyServing(status)
                                        : verifier.verify(status));
                        o.put("verified", true);
                    } catch (AssertionError | RuntimeException ex) {
                        o.put("verified", false).put("error", String.valueOf(ex.getMessage()));
                    }
                }
            }
            return answer;
        }
    }
}
