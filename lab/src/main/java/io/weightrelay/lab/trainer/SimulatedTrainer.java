package io.weightrelay.lab.trainer;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.testkit.sim.SimulatedModel;
import io.weightrelay.trainer.client.PublishFailedException;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TrainerSession;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./relay trainer}: publishes generations of a catalogued model with deterministic contents
 * through control-api and one publisher-service per trainer node. Prints one JSON line per
 * generation; exits 1 when a generation was aborted.
 */
public final class SimulatedTrainer {

    private SimulatedTrainer() {}

    /**
     * What {@code ./relay trainer}'s flags say, defaults applied there.
     *
     * @param publishers {@code node=url}, one per trainer node
     * @param token the trainer token; null for {@code $RELAY_TRAINER_TOKEN}
     * @param steps generations to publish, from training step {@code firstStep} on
     * @param maxFragmentBytes the largest stored object
     */
    public record Options(
            String model,
            String controlApi,
            List<String> publishers,
            String token,
            long steps,
            long firstStep,
            long seed,
            DType trainerDtype,
            DType rolloutDtype,
            long maxFragmentBytes) {}

    public static void run(Options options) {
        String model = options.model();
        long maxFragment = options.maxFragmentBytes();
        SourceManifest manifest =
                SimulatedModel.manifest(
                        model, options.trainerDtype(), options.rolloutDtype(), maxFragment);
        String token =
                options.token() != null ? options.token() : System.getenv("RELAY_TRAINER_TOKEN");
        Map<String, PublisherClient> publishers = new LinkedHashMap<>();
        for (String spec : options.publishers()) {
            String[] kv = spec.split("=", 2);
            publishers.put(kv[0], PublisherClient.connect(kv[1], token, Duration.ofMinutes(5)));
        }
        RestCoordinator coordinator =
                new RestCoordinator(
                        options.controlApi(), token, Duration.ofMinutes(2), maxFragment);
        RankPublisher.Options publishing =
                new RankPublisher.Options(2, false, Duration.ofMinutes(5));
        TrainerSession session = new TrainerSession(coordinator, publishers, publishing);
        long seed = options.seed();
        long first = options.firstStep();
        long steps = options.steps();
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
