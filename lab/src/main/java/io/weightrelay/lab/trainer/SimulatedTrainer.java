package io.weightrelay.lab.trainer;

import io.weightrelay.lab.Args;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.testkit.sim.SimulatedModel;
import io.weightrelay.trainer.client.PublishFailedException;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TrainerSession;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./relay trainer}: publishes generations of a catalogued model with deterministic contents
 * through control-api and one publisher-service per trainer node.
 *
 * <pre>
 * --model qwen2.5-0.5b            catalogued model (tiny, qwen2.5-0.5b, ...)
 * --control-api http://127.0.0.1:8080
 * --publisher trainer-0000=http://127.0.0.1:8081   one per trainer node (repeat the flag)
 * --trainer-dtype bf16 --rollout-dtype bf16
 * --seed 1 --steps 1 --first-step 0
 * --max-fragment-bytes 67108864 --token &lt;trainer token&gt;
 * </pre>
 *
 * Prints one JSON line per generation; exits 1 when a generation was aborted.
 */
public final class SimulatedTrainer {

    private SimulatedTrainer() {}

    public static void main(String[] argv) {
        Args args = new Args(argv);
        String model = args.get("model", "tiny");
        long maxFragment =
                args.getLong("max-fragment-bytes", Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES);
        SourceManifest manifest =
                SimulatedModel.manifest(
                        model,
                        DType.ofWireName(args.get("trainer-dtype", "bf16")),
                        DType.ofWireName(args.get("rollout-dtype", "bf16")),
                        maxFragment);
        String token = args.get("token", System.getenv("RELAY_TRAINER_TOKEN"));
        Map<String, PublisherClient> publishers = new LinkedHashMap<>();
        List<String> specs = new ArrayList<>(args.all("publisher"));
        if (specs.isEmpty()) {
            specs.add("trainer-0000=http://127.0.0.1:8081");
        }
        for (String spec : specs) {
            String[] kv = spec.split("=", 2);
            publishers.put(kv[0], PublisherClient.connect(kv[1], token, Duration.ofMinutes(5)));
        }
        RestCoordinator coordinator =
                new RestCoordinator(
                        args.get("control-api", "http://127.0.0.1:8080"),
                        token,
                        Duration.ofMinutes(2),
                        maxFragment);
        RankPublisher.Options options = new RankPublisher.Options(2, false, Duration.ofMinutes(5));
        TrainerSession session = new TrainerSession(coordinator, publishers, options);
        long seed = args.seed();
        long first = args.getLong("first-step", 0);
        long steps = args.getLong("steps", 1);
        int failures = 0;
        for (long step = first; step < first + steps; step++) {
            long started = System.nanoTime();
            try {
                TrainerSession.Outcome o =
                        session.publish(manifest, step, g -> new DeterministicWeights(seed, g));
                double seconds = (System.nanoTime() - started) / 1e9;
                System.out.println(
                        String.format(
                                Locale.ROOT,
                                "{\"model\":\"%s\",\"step\":%d,\"generation\":%d,\"committed\":true,"
                                        + "\"bytes\":%d,\"nodes\":%d,\"seconds\":%.3f}",
                                model,
                                step,
                                o.generation(),
                                o.bytes(),
                                publishers.size(),
                                seconds));
            } catch (PublishFailedException e) {
                failures++;
                System.out.println(
                        String.format(
                                Locale.ROOT,
                                "{\"model\":\"%s\",\"step\":%d,\"generation\":%d,\"committed\":false,"
                                        + "\"error\":\"%s\"}",
                                model,
                                step,
                                e.generation(),
                                e.getMessage().replace("\\", "\\\\").replace("\"", "'")));
            }
        }
        if (failures > 0) {
            System.exit(1);
        }
    }
}
