package io.weightrelay.lab.bench;

import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.web.client.RestClientResponseException;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./relay bench control-plane --model kimi-k2 --trainer-nodes 32 --instances 32 --tp 8
 * --mode direct|compat}: the control plane alone at scale. Starts control-api (its exec jar, as a
 * child JVM at {@code -Xmx1g} unless {@code --control-heap} says otherwise) and plays, over REST
 * with the generated clients, everything that talks to it during one update: the trainer (open,
 * commit), one publisher per trainer node (read the manifest, register the objects it stored) and
 * one loader per rollout instance (register, heartbeat, resolve the plan, prepare, the session's
 * barriers). The players build their requests with the client kit's pieces of the services'
 * protocol ({@code ControlManifests}, {@code StoredObject}, {@code PlacementTemplates}, {@code
 * PrepareRequests}, {@code PlanSlices}), the ones publisher-service and loader-service use, so the
 * bench times the calls the services make, not a copy of them. No tensor byte moves: the store is a
 * stand-in that knows only which objects exist (the publishers "store" them, the loaders check
 * their reads against it), and the output says so.
 *
 * <p>Prints one JSON line: {@code open_ms}, {@code publisher_manifest_ms} (every publisher reads
 * the manifest, together), {@code register_objects_ms}, {@code commit_ms}, {@code
 * register_loaders_ms}, {@code plan_cold_ms} (the first resolve, which computes the plan), {@code
 * plan_warm_ms} (every loader resolves together, cache hits; the slowest), {@code prepare_ms} (per
 * loader, the slowest: the wall time of its calls, every loader calling at once, as loader-service
 * makes them for a plan and manifest it has not seen (the one prepare call, which checks the
 * generation, resolves the plan, starts or joins the session, takes the lease and lists the group's
 * buffers; then the manifest and its plan slice), plus the CPU time of its own work on what it
 * fetched (inflating the gzip bodies, decoding, checking), since each loader does that on its own
 * host; {@code prepare_fetch_ms} and {@code prepare_check_cpu_ms} are the slowest of each part,
 * {@code prepare_call_ms}, {@code prepare_manifest_ms} and {@code prepare_slice_ms} the slowest of
 * each call, {@code prepare_wall_ms} the whole step with every loader's checks sharing this
 * machine's cores), {@code session_ms} (every report and barrier of the session the prepare calls
 * joined, until the post-applied barrier is open for all; {@code session_watch_ms} is the slowest
 * of the session watches in it, one per loader after it reports applying, all at once), the largest
 * request and response in bytes with the call that made them, and control-api's peak heap from its
 * GC log ({@code control_peak_heap_bytes} just before a collection, {@code
 * control_peak_live_heap_bytes} just after). A step that fails ends the run: the line then names it
 * in {@code failed_step} with {@code error}, and the exit code is 1. {@code control_cpu_<step>} is
 * control-api's CPU time during each step (all its threads), steadier than the wall times on a
 * shared machine.
 *
 * <p>Sizes: {@code --model} is a catalogued model; {@code --tensors N} scales it to about N tensors
 * instead (fewer layers, and fewer experts where even two layers have too many: a synthetic model,
 * reported as such in {@code synthetic}), so the same bench runs at 700, 7,000 and 70,000 tensors.
 *
 * <p>The flags and their defaults: {@code ./relay bench control-plane --help} ({@link Options}).
 * {@code --warmup N} runs whole runs first on the same deployment with the model scaled to a tenth
 * of its tensors, at least 700, under another model name, their loaders deregistered after: the JIT
 * has then compiled the paths the measured run takes, as in a control-api that has served updates;
 * 0 for a cold one.
 */
public final class ControlPlaneBench {

    static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String TRAINER_TOKEN = "bench-trainer-" + UUID.randomUUID();
    static final String LOADER_TOKEN = "bench-loader-" + UUID.randomUUID();
    static final String OPERATOR_TOKEN = "bench-operator-" + UUID.randomUUID();
    static final String STORE =
            "stand-in: the bench records which objects the publishers stored and the loaders check"
                    + " their reads against it; no tensor bytes move";

    private ControlPlaneBench() {}

    /** {@code ./relay bench control-plane}'s flags, as its {@code --help} describes them. */
    public record Options(
            String model,
            int tensors,
            int trainerNodes,
            int instances,
            int tp,
            int ep,
            int rolloutNodes,
            Mode mode,
            String controlHeap,
            int warmup,
            Players players,
            BenchServices services) {}

    /**
     * {@code ./relay bench control-plane}: prints the bench's JSON line; exit 1 on a failed step.
     */
    public static void run(Options o) throws Exception {
        String heap = o.controlHeap();
        int warmups = o.warmup();
        Players options = o.players();

        // The deployment, for any model size and name prefix: the measured run and its warm-ups.
        BiFunction<String, Integer, Scenario> deployment =
                (prefix, size) -> Scenario.of(prefix, o, size);
        Scenario scenario = deployment.apply("", o.tensors());
        System.err.printf(
                Locale.ROOT,
                "bench control-plane: %s, %d tensors, %d objects, %d workers in %d instances (%s)%n",
                scenario.model(),
                scenario.manifest().tensors().size(),
                scenario.manifest().fragments().size(),
                scenario.placement().workers().size(),
                o.instances(),
                o.mode().name().toLowerCase(Locale.ROOT));

        int exit = 0;
        try (BenchRun run = new BenchRun("control-plane", o.services())) {
            Path gcLog = run.logs.resolve("control-api-gc.log");
            ServiceProcess control =
                    run.startControlApi(
                            heap,
                            List.of("-Xlog:gc:file=" + gcLog),
                            "--relay.security.tokens.trainer[0]=" + TRAINER_TOKEN,
                            "--relay.security.tokens.loader[0]=" + LOADER_TOKEN,
                            "--relay.security.tokens.operator[0]=" + OPERATOR_TOKEN);
            control.awaitHealthy(Duration.ofMinutes(3));
            // The warm-up deploys the same topology with a tenth of the tensors, so the paths the
            // measured run takes at scale (request parsing and validation, registration, plan,
            // slices, the proof) are compiled, as in a control-api that has served updates before.
            int warmTensors = Math.max(700, scenario.manifest().tensors().size() / 10);
            for (int w = 0; w < warmups; w++) {
                Scenario warm = deployment.apply("warmup" + (w + 1) + "-", warmTensors);
                ControlPlaneBenchRun warmBench =
                        new ControlPlaneBenchRun(control, warm, options, w + 1);
                Figures warmed = warmBench.run();
                if (warmed.failedStep != null) {
                    throw new IllegalStateException(
                            "warm-up failed at " + warmed.failedStep + ": " + warmed.error);
                }
                warmBench.leave();
            }
            Figures f = new ControlPlaneBenchRun(control, scenario, options, 1).run();
            if (warmups > 0) {
                f.extra.put("warmup_tensors", (long) warmTensors);
            }
            Heap peak = Heap.fromGcLog(gcLog);
            System.out.println(f.toJson(scenario, heap, peak, warmups));
            if (f.failedStep != null) {
                run.showTails();
                exit = 1;
            }
        }
        System.exit(exit);
    }

    /** How the players behave. */
    public record Players(int registerChunk, Duration heartbeat, Duration callTimeout) {}

    /** What one run measured; {@code failedStep} names the step that ended it, if one did. */
    static final class Figures {
        final Map<String, Long> steps = new LinkedHashMap<>();
        final Map<String, Long> cpu = new LinkedHashMap<>();
        final Map<String, Long> extra = new LinkedHashMap<>();
        long registerRequests;
        long retries503;
        long heartbeats;
        long heartbeatFailures;
        String heartbeatError;
        Wire.Largest largestRequest;
        Wire.Largest largestResponse;
        String failedStep;
        String error;

        String toJson(Scenario s, String heap, Heap peak, int warmups) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("model", s.model());
            out.put("synthetic", s.synthetic());
            out.put("tensors", s.manifest().tensors().size());
            out.put("objects", s.manifest().fragments().size());
            out.put("model_bytes", s.manifest().totalBytes());
            out.put("mode", s.mode() == Mode.DIRECT ? "direct" : "compat");
            out.put("trainer_nodes", s.trainerNodes());
            out.put("instances", s.instances());
            out.put("tp", s.tp());
            out.put("ep", s.ep());
            out.put("rollout_nodes", s.rolloutNodes());
            out.put("store", STORE);
            for (String step :
                    List.of(
                            "open_ms",
                            "publisher_manifest_ms",
                            "register_objects_ms",
                            "commit_ms",
                            "register_loaders_ms",
                            "plan_cold_ms",
                            "plan_warm_ms",
                            "prepare_ms",
                            "session_ms")) {
                out.put(step, steps.get(step));
            }
            out.putAll(extra);
            // control-api's own CPU time per step (all its threads): on a shared machine it tells
            // the work apart from the waiting the wall times include.
            for (Map.Entry<String, Long> c : cpu.entrySet()) {
                out.put("control_cpu_" + c.getKey(), c.getValue());
            }
            out.put("register_requests", registerRequests);
            out.put("retries_503", retries503);
            out.put("largest_request_bytes", largestRequest == null ? 0 : largestRequest.bytes());
            out.put("largest_request", largestRequest == null ? null : largestRequest.call());
            out.put(
                    "largest_response_bytes",
                    largestResponse == null ? 0 : largestResponse.bytes());
            out.put("largest_response", largestResponse == null ? null : largestResponse.call());
            out.put("control_heap_max", heap);
            out.put("control_peak_heap_bytes", peak.peakUsed());
            out.put("control_peak_live_heap_bytes", peak.peakLive());
            out.put("control_gcs", peak.collections());
            out.put("heartbeats", heartbeats);
            out.put("heartbeat_failures", heartbeatFailures);
            out.put("heartbeat_error", heartbeatError);
            out.put("warmup_runs", warmups);
            out.put("failed_step", failedStep);
            out.put("error", error);
            return JSON.writeValueAsString(out);
        }
    }

    /** Runs {@code body} for every item at once on {@code pool}; rethrows the first failure. */
    static <I, T> List<T> all(ExecutorService pool, Iterable<I> items, Task<I, T> body) {
        List<Future<T>> futures = new ArrayList<>();
        for (I item : items) {
            futures.add(pool.submit(() -> body.apply(item)));
        }
        List<T> out = new ArrayList<>();
        RuntimeException first = null;
        for (Future<T> future : futures) {
            try {
                out.add(future.get());
            } catch (ExecutionException e) {
                if (first == null) {
                    first =
                            e.getCause() instanceof RuntimeException r
                                    ? r
                                    : new IllegalStateException(e.getCause());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
        if (first != null) {
            throw first;
        }
        return out;
    }

    /** One player's part of a step. */
    @FunctionalInterface
    interface Task<I, T> {
        T apply(I item) throws Exception;
    }

    /** control-api's heap at its fullest, from its {@code -Xlog:gc} lines. */
    record Heap(long peakUsed, long peakLive, int collections) {
        private static final Pattern PAUSE =
                Pattern.compile("(\\d+)([KMG])->(\\d+)([KMG])\\((\\d+)([KMG])\\)");

        static Heap fromGcLog(Path log) {
            long used = 0;
            long live = 0;
            int collections = 0;
            List<String> lines;
            try {
                lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            for (String line : lines) {
                Matcher m = PAUSE.matcher(line);
                if (m.find()) {
                    collections++;
                    used = Math.max(used, bytes(m.group(1), m.group(2)));
                    live = Math.max(live, bytes(m.group(3), m.group(4)));
                }
            }
            return new Heap(used, live, collections);
        }

        private static long bytes(String value, String unit) {
            long v = Long.parseLong(value);
            return switch (unit) {
                case "K" -> v << 10;
                case "M" -> v << 20;
                default -> v << 30;
            };
        }
    }

    static String describe(Throwable e) {
        if (e instanceof RestClientResponseException r) {
            String body = r.getResponseBodyAsString();
            return r.getStatusCode().value()
                    + " "
                    + (body.length() > 600 ? body.substring(0, 600) + "..." : body);
        }
        return String.valueOf(e);
    }
}
