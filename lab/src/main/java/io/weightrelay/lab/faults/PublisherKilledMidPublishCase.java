package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.allInstances;
import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabFaults;
import io.weightrelay.trainer.client.PublishFailedException;
import io.weightrelay.trainer.client.TensorSource;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Case 1: a publisher is killed (SIGKILL) in the middle of a publish. The lab's trainer holds one
 * rank inside its generator halfway through the model (a hook of the simulated trainer, none in the
 * services) while the other publisher goes on, kills the held rank's publisher, then lets the rank
 * go on. The trainer gets an error naming the dead publisher, the generation is aborted and its
 * objects are removed from the directory, the previous one stays active and every engine goes on
 * serving it byte for byte.
 */
final class PublisherKilledMidPublishCase {

    private PublisherKilledMidPublishCase() {}

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        LabFaults faults = lab.faults();
        long previous = fault.active();
        int tensors = lab.manifest().tensors().size();
        int holdAt = Math.max(1, tensors / 2);
        AtomicInteger writes = new AtomicInteger();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        long step = fault.nextStep();
        CompletableFuture<Long> publish =
                CompletableFuture.supplyAsync(
                        () ->
                                faults.publish(
                                        step,
                                        source ->
                                                new TensorSource() {
                                                    @Override
                                                    public void write(
                                                            int t,
                                                            io.weightrelay.reshard.manifest
                                                                            .TensorSpec
                                                                    spec,
                                                            long offset,
                                                            ByteBuffer target) {
                                                        if (writes.incrementAndGet() == holdAt) {
                                                            held.countDown();
                                                            await(release);
                                                        }
                                                        source.write(t, spec, offset, target);
                                                    }

                                                    @Override
                                                    public void skip(
                                                            int t,
                                                            io.weightrelay.reshard.manifest
                                                                            .TensorSpec
                                                                    spec) {
                                                        source.skip(t, spec);
                                                    }
                                                }));
        if (!held.await(120, TimeUnit.SECONDS)) {
            throw new AssertionError("the publish never reached tensor write " + holdAt);
        }
        String url = lab.publisherUrl(1);
        String segment = faults.killPublisher(1);
        fault.destroyedEveryCommitted();
        long killed = System.nanoTime();
        release.countDown();
        String error;
        long aborted;
        try {
            long g = publish.get(3, TimeUnit.MINUTES);
            throw new AssertionError("generation " + g + " committed with its publisher dead");
        } catch (TimeoutException e) {
            throw new AssertionError("the trainer still waits 3 minutes after its publisher died");
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof PublishFailedException failed)) {
                throw new AssertionError("the trainer got " + e.getCause(), e.getCause());
            }
            error = failed.getMessage();
            aborted = failed.generation();
        }
        double seconds = (System.nanoTime() - killed) / 1e9;
        check(
                error.contains("trainer-0001") && error.contains(url),
                "the trainer's error names the publisher (trainer-0001 at " + url + "): " + error);
        check(
                lab.generation(aborted).getState() == GenerationState.ABORTED,
                "generation " + aborted + " is ABORTED: " + lab.generation(aborted).getState());
        long left = faults.storedObjects(aborted);
        check(left == 0, left + " object(s) of aborted generation " + aborted + " still listed");
        check(
                lab.activeGeneration().getGeneration() == previous,
                "generation " + previous + " stays active");
        fault.ledger().observe(lab, allInstances(lab));
        faults.revivePublisher(1);
        return "generation "
                + aborted
                + " aborted "
                + String.format("%.1f", seconds)
                + " s after "
                + segment
                + "'s publisher died, no object left, "
                + previous
                + " still active; the trainer got: "
                + error;
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(5, TimeUnit.MINUTES)) {
                throw new IllegalStateException("never released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while held", e);
        }
    }
}
