package io.weightrelay.trainer.client;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A whole publish, as the trainer coordinator drives it for ranks it runs itself (one rank per
 * trainer node, each on its own thread): open, every rank publishes its share, then commit when
 * every rank finished cleanly, otherwise abort with the ranks' reasons and throw.
 *
 * <p>Thread safe; one publish at a time per session is the intended use.
 */
public final class TrainerSession {

    private static final Logger log = LoggerFactory.getLogger(TrainerSession.class);

    private final Coordinator coordinator;
    private final Map<String, PublisherClient> publishers;
    private final RankPublisher.Options options;

    /**
     * @param publishers trainer node name to the publisher-service of that node
     */
    public TrainerSession(
            Coordinator coordinator,
            Map<String, PublisherClient> publishers,
            RankPublisher.Options options) {
        this.coordinator = coordinator;
        this.publishers = Map.copyOf(publishers);
        this.options = options;
    }

    /**
     * What a committed publish did.
     *
     * @param generation the committed generation
     * @param ranks what each node's rank did
     * @param firstHandOverNanos {@link System#nanoTime()} of the first batch handed over
     * @param finishedNanos {@link System#nanoTime()} when every rank had finished
     * @param committedNanos {@link System#nanoTime()} when the commit returned
     */
    public record Outcome(
            long generation,
            List<RankPublisher.Result> ranks,
            long firstHandOverNanos,
            long finishedNanos,
            long committedNanos) {
        public long bytes() {
            return ranks.stream().mapToLong(RankPublisher.Result::bytes).sum();
        }
    }

    /**
     * Publishes one generation.
     *
     * @param sources the bytes of each generation (the number is known only once it is open)
     * @throws PublishFailedException if any rank failed or the commit was refused; the generation
     *     has been aborted then
     */
    public Outcome publish(
            SourceManifest manifest, long trainerStep, LongFunction<TensorSource> sources) {
        List<String> nodes = publishers.keySet().stream().sorted().toList();
        Coordinator.OpenedGeneration opened = coordinator.open(manifest, nodes, trainerStep);
        long generation = opened.generation();
        TensorSource source = sources.apply(generation);
        ExecutorService ranks = Executors.newFixedThreadPool(nodes.size());
        List<RankPublisher.Result> results = new ArrayList<>();
        try {
            List<CompletableFuture<RankPublisher.Result>> futures = new ArrayList<>();
            CyclicBarrier staged = new CyclicBarrier(nodes.size());
            Runnable afterStaging =
                    () -> {
                        try {
                            staged.await(10, TimeUnit.MINUTES);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new IllegalStateException(
                                    "interrupted at the staging barrier", e);
                        } catch (BrokenBarrierException | TimeoutException e) {
                            throw new IllegalStateException(
                                    "another rank never finished staging", e);
                        }
                    };
            for (String node : nodes) {
                RankPublisher rank =
                        new RankPublisher(publishers.get(node), node, options, afterStaging);
                futures.add(
                        CompletableFuture.supplyAsync(
                                () ->
                                        rank.publish(
                                                manifest,
                                                generation,
                                                opened.nodeOfTensor(),
                                                source),
                                ranks));
            }
            for (int i = 0; i < futures.size(); i++) {
                try {
                    results.add(futures.get(i).join());
                } catch (RuntimeException e) {
                    results.add(
                            new RankPublisher.Result(
                                    nodes.get(i), null, String.valueOf(e.getMessage()), 0, 0, 0));
                }
            }
        } finally {
            ranks.shutdownNow();
        }
        List<String> failures = new ArrayList<>();
        for (RankPublisher.Result r : results) {
            if (!r.ok()) {
                failures.add(r.node() + ": " + r.failure());
            }
        }
        long finished = System.nanoTime();
        if (failures.isEmpty()) {
            try {
                coordinator.commit(new GenerationId(manifest.model(), generation));
                long committed = System.nanoTime();
                long first =
                        results.stream()
                                .mapToLong(RankPublisher.Result::firstHandOverNanos)
                                .filter(t -> t != 0)
                                .min()
                                .orElse(committed);
                return new Outcome(generation, List.copyOf(results), first, finished, committed);
            } catch (RuntimeException e) {
                failures.add("commit refused: " + e.getMessage());
            }
        }
        String reason = String.join("; ", failures);
        log.warn("aborting {}/{}: {}", manifest.model(), generation, reason);
        try {
            coordinator.abort(new GenerationId(manifest.model(), generation), reason);
        } catch (RuntimeException e) {
            throw new PublishFailedException(
                    generation,
                    "generation "
                            + generation
                            + " failed ("
                            + reason
                            + ") and its abort failed too: "
                            + e.getMessage(),
                    e);
        }
        throw new PublishFailedException(
                generation,
                "generation " + generation + " aborted, the previous one stays active: " + reason,
                null);
    }
}
