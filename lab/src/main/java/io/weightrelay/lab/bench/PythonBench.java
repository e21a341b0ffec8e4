package io.weightrelay.lab.bench;

import io.weightrelay.lab.cli.RelayCli;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TrainerSession;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Python package ({@code python/}, {@code weight_relay}) against the Java clients, on one lab.
 *
 * <p>{@code ./relay bench python --model qwen2.5-0.5b [--instances 2] [--tp 1] [--mode compat]
 * [--repeat 3] [--python PATH]}: starts a {@link LabCluster}; the Java trainer client publishes and
 * the Java lab engines update ({@code --repeat} measured rounds after a cold one), then {@code
 * python -m weight_relay.bench} does the same with the Python package on the same lab, same model
 * (two trainer ranks, the same registered engines) and checks every byte the engines received
 * against what it published. One JSON line: {@code python_publish_s}, {@code java_publish_s} (first
 * batch handed over to the commit, every batch staged first, as {@code bench publish}), {@code
 * python_update_s}, {@code java_update_s} (first update request to the last engine UPDATED), the
 * best of the runs each, {@code python_vs_java} (the worse of the two ratios) and {@code
 * bit_exact}.
 *
 * <p>{@code --serve}: starts the lab, prints one JSON line describing it ({@code {"lab": ...}}:
 * service URLs, tokens, the published manifest) and keeps it running until standard input closes;
 * the Python tests start their lab this way.
 */
public final class PythonBench {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private PythonBench() {}

    /**
     * {@code ./relay bench python}'s flags, as its {@code --help} describes them; {@code python}
     * null: {@code $WEIGHT_RELAY_VENV/bin/python}.
     */
    public record Options(
            String model,
            int instances,
            int tp,
            Mode mode,
            int repeat,
            String python,
            boolean serve) {}

    /**
     * The Python tests and recipes start their lab as a JVM of its own, {@code PythonBench --serve
     * --model tiny ...}: the flags of {@code ./relay bench python}, read by its command, on the
     * lab's configured Redis.
     */
    public static void main(String[] argv) throws Exception {
        List<String> line = new ArrayList<>(List.of("bench", "python"));
        line.addAll(List.of(argv));
        int code =
                RelayCli.execute(
                        line.toArray(String[]::new),
                        System.out,
                        System.err,
                        (command, invocation, redis) -> invocation.run());
        if (code != 0) {
            System.exit(code);
        }
    }

    /** {@code ./relay bench python}: prints the bench's JSON line, or serves the lab. */
    public static void run(Options options) throws Exception {
        String model = options.model();
        int repeat = options.repeat();
        Path root = ServiceProcess.home();
        LabCluster.Spec spec =
                LabCluster.Spec.of(model, options.instances(), options.tp(), options.mode());
        try (LabCluster lab = LabCluster.start(spec)) {
            Path info = Files.createTempFile(lab.logs(), "lab-", ".json");
            Files.writeString(info, describe(lab, model));
            if (options.serve()) {
                System.out.println("{\"lab\":" + describe(lab, model) + "}");
                System.out.flush();
                BufferedReader in =
                        new BufferedReader(
                                new InputStreamReader(System.in, StandardCharsets.UTF_8));
                while (in.readLine() != null) {
                    // until the parent closes our standard input
                }
                return;
            }
            double[] jv = javaRounds(lab, model, repeat);
            JsonNode py =
                    python(
                            root,
                            options.python() != null ? options.python() : defaultPython(),
                            info,
                            repeat);
            double pp = py.get("python_publish_s").asDouble();
            double pu = py.get("python_update_s").asDouble();
            double ratio = Math.max(pp / jv[0], pu / jv[1]);
            System.out.printf(
                    "{\"bench\":\"python\",\"model\":\"%s\",\"instances\":%d,\"tp\":%d,"
                            + "\"mode\":\"%s\",\"bytes\":%d,\"python_publish_s\":%.4f,"
                            + "\"java_publish_s\":%.4f,\"python_update_s\":%.4f,"
                            + "\"java_update_s\":%.4f,\"python_vs_java\":%.3f,"
                            + "\"bit_exact\":%s,\"python_publish_s_runs\":%s,"
                            + "\"python_update_s_runs\":%s}%n",
                    model,
                    spec.instances(),
                    spec.tp(),
                    spec.modeName(),
                    py.get("bytes").asLong(),
                    pp,
                    jv[0],
                    pu,
                    jv[1],
                    ratio,
                    py.get("bit_exact").asBoolean(),
                    py.get("publish_s_runs"),
                    py.get("update_s_runs"));
        }
    }

    /** Best publish and best update seconds of {@code repeat} Java rounds after a cold one. */
    private static double[] javaRounds(LabCluster lab, String model, int repeat) throws Exception {
        Map<String, PublisherClient> publishers = new LinkedHashMap<>();
        lab.serviceUrls()
                .forEach(
                        (name, url) -> {
                            if (name.startsWith("publisher-")) {
                                publishers.put(
                                        name.substring("publisher-".length()),
                                        PublisherClient.connect(
                                                url, lab.trainerToken(), Duration.ofMinutes(5)));
                            }
                        });
        // As the lab's own trainer: checksums, two batches in flight, every batch staged first.
        TrainerSession session =
                new TrainerSession(
                        new RestCoordinator(
                                lab.controlUrl(),
                                lab.trainerToken(),
                                Duration.ofMinutes(2),
                                Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES),
                        publishers,
                        new RankPublisher.Options(2, true, Duration.ofMinutes(2)));
        double publish = Double.MAX_VALUE;
        double update = Double.MAX_VALUE;
        for (int r = 0; r <= repeat; r++) {
            TrainerSession.Outcome o =
                    session.publish(lab.manifest(), r, g -> new DeterministicWeights(1, g));
            double u = lab.updateAll().requireUpdated().seconds();
            lab.collectGarbage();
            if (r > 0) {
                publish = Math.min(publish, (o.committedNanos() - o.firstHandOverNanos()) / 1e9);
                update = Math.min(update, u);
            }
        }
        return new double[] {publish, update};
    }

    private static JsonNode python(Path root, String python, Path info, int repeat)
            throws IOException, InterruptedException {
        ProcessBuilder pb =
                new ProcessBuilder(
                        python,
                        "-m",
                        "weight_relay.bench",
                        "--lab",
                        info.toString(),
                        "--repeat",
                        Integer.toString(repeat));
        pb.environment().put("PYTHONPATH", root.resolve("python").resolve("src").toString());
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int rc = p.waitFor();
        String last = "";
        for (String line : out.split("\n")) {
            if (line.startsWith("{")) {
                last = line;
            }
        }
        if (rc != 0 || last.isEmpty()) {
            throw new IllegalStateException(
                    "python bench exited " + rc + " (" + python + "): " + out.strip());
        }
        return JSON.readTree(last);
    }

    /** The venv {@code python/ci-venv.sh} creates, unless {@code WEIGHT_RELAY_VENV} moves it. */
    private static String defaultPython() {
        String venv = System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
        return Path.of(venv, "bin", "python").toString();
    }

    private static String describe(LabCluster lab, String model) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("model", model);
        out.put("services", lab.serviceUrls());
        out.put("controlUrl", lab.controlUrl());
        out.put("trainerToken", lab.trainerToken());
        out.put("operatorToken", lab.operatorToken());
        out.put("dataplanePrefix", lab.dataplanePrefix());
        List<String> instances = new ArrayList<>();
        Map<String, String> loaderTokens = new LinkedHashMap<>();
        lab.engines()
                .forEach(
                        e -> {
                            instances.add(e.instance());
                            loaderTokens.put(e.instance(), lab.loaderToken(e.instance()));
                        });
        out.put("instances", instances);
        // each loader token is bound to its instance: a call about another one is refused
        out.put("loaderTokens", loaderTokens);
        SourceManifest m = lab.manifest();
        List<Map<String, Object>> tensors = new ArrayList<>();
        for (TensorSpec t : m.tensors()) {
            Map<String, Object> j = new LinkedHashMap<>();
            j.put("name", t.name());
            j.put("shape", t.shape().dims());
            j.put("trainerDtype", t.trainerDtype().wireName());
            j.put("rolloutDtype", t.rolloutDtype().wireName());
            tensors.add(j);
        }
        out.put(
                "manifest",
                Map.of(
                        "model",
                        m.model(),
                        "maxFragmentBytes",
                        Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES,
                        "tensors",
                        tensors));
        return JSON.writeValueAsString(out);
    }
}
