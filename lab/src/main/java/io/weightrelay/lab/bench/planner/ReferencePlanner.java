package io.weightrelay.lab.bench.planner;

import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * {@code --against mooncake-3441}: the same deployment planned by Mooncake's #3441 planner, in the
 * venv {@code python/ci-venv.sh} makes ({@code WEIGHT_RELAY_VENV} moves it), by {@code
 * lab/src/main/python/mooncake_3441_reference.py}, under a time limit. The deployment crosses as
 * JSON: the manifest, and the boxes of each rank of the first instance (every instance of a
 * catalogued placement has that layout). Its answer is one JSON object of {@code reference*}
 * members: planned (time, peak resident bytes), refused (why) or, past the limit, {@code timeout}.
 */
final class ReferencePlanner {
    private ReferencePlanner() {}

    static String plan(
            SourceManifest manifest, TargetPlacement placement, PlannerOptions args, int instances)
            throws IOException, InterruptedException {
        Path input = Files.createTempFile("mooncake-3441-", ".json");
        try {
            write(input, manifest, placement, args, instances);
            String venv =
                    System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
            Path script =
                    ServiceProcess.home().resolve("lab/src/main/python/mooncake_3441_reference.py");
            Process process =
                    new ProcessBuilder(
                                    Path.of(venv, "bin", "python").toString(),
                                    script.toString(),
                                    input.toString())
                            .redirectError(ProcessBuilder.Redirect.INHERIT)
                            .start();
            if (!process.waitFor(args.againstTimeoutS(), TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                return "{\"reference\":\"timeout\",\"reference_timeout_s\":"
                        + args.againstTimeoutS()
                        + "}";
            }
            String out =
                    new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
                            .strip();
            if (process.exitValue() != 0 || !out.startsWith("{")) {
                throw new IllegalStateException(
                        "the #3441 reference ("
                                + script
                                + ", venv "
                                + venv
                                + ") exited "
                                + process.exitValue()
                                + ": "
                                + out);
            }
            return out;
        } finally {
            Files.deleteIfExists(input);
        }
    }

    private static void write(
            Path file,
            SourceManifest m,
            TargetPlacement placement,
            PlannerOptions args,
            int instances)
            throws IOException {
        try (BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            out.write(
                    String.format(
                            "{\"model\":\"%s\",\"tp\":%d,\"ep\":%d,\"pp\":%d,\"instances\":%d,",
                            m.model(), args.tp(), args.ep(), args.pp(), instances));
            out.write("\"tensors\":[");
            String sep = "";
            for (TensorSpec t : m.tensors()) {
                out.write(
                        String.format(
                                "%s{\"name\":\"%s\",\"shape\":%s,\"dtype\":\"%s\",\"itemsize\":%d}",
                                sep,
                                t.name(),
                                dims(t.shape().dims()),
                                t.rolloutDtype().safetensorsName(),
                                t.rolloutDtype().bytes()));
                sep = ",";
            }
            out.write("],\"stored\":[");
            sep = "";
            for (StoredFragment f : m.fragments()) {
                out.write(
                        String.format(
                                "%s{\"fragment\":\"%s\",\"tensor\":\"%s\",\"offset\":%s,\"shape\":%s,\"bytes\":%d}",
                                sep,
                                f.fragment(),
                                f.tensor(),
                                dims(f.offset().dims()),
                                dims(f.shape().dims()),
                                f.bytes()));
                sep = ",";
            }
            out.write("],\"ranks\":[");
            String first = placement.workers().get(0).instance();
            int ranksPerStage = args.tp();
            int index = 0;
            for (Worker w : placement.workers()) {
                if (!w.instance().equals(first)) {
                    continue;
                }
                int tp = index % ranksPerStage;
                int ep = args.ep() > 1 ? tp / (args.tp() / args.ep()) : 0;
                out.write(
                        String.format(
                                "%s{\"index\":%d,\"pp\":%d,\"tp\":%d,\"ep\":%d,\"fragments\":[",
                                index == 0 ? "" : ",", index, index / ranksPerStage, tp, ep));
                sep = "";
                if (w.mode() == Mode.COMPAT) {
                    for (TensorSpec t : m.tensors()) {
                        long[] zero = new long[t.shape().rank()];
                        out.write(box(sep, t.name(), zero, t.shape().dims()));
                        sep = ",";
                    }
                } else {
                    for (TargetFragment f : w.fragments()) {
                        out.write(box(sep, f.tensor(), f.offset().dims(), f.shape().dims()));
                        sep = ",";
                    }
                }
                out.write("]}");
                index++;
            }
            out.write("]}");
        }
    }

    private static String box(String sep, String tensor, long[] offset, long[] shape) {
        return sep + "[\"" + tensor + "\"," + dims(offset) + "," + dims(shape) + "]";
    }

    private static String dims(long[] dims) {
        return Arrays.toString(dims).replace(" ", "");
    }
}
