package io.weightrelay.loader.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.loader.update.UpdateRun.Outcome;
import io.weightrelay.loader.update.UpdateRun.Phase;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The long poll an engine follows its update with. */
class UpdateRunTest {

    @Test
    void aRunningUpdateAnswersWithItsProgressOnceTheWaitHasPassed() throws Exception {
        UpdateRun run = new UpdateRun("i0:g2:x", 2, 1L);
        run.enter(Phase.APPLYING);

        long started = System.nanoTime();
        UpdateRun.Snapshot s = run.awaitOutcome(Duration.ofMillis(150));

        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
                .isGreaterThanOrEqualTo(150);
        assertThat(s.outcome()).isEqualTo(Outcome.RUNNING);
        assertThat(s.phase()).isEqualTo(Phase.APPLYING);
    }

    @Test
    void theOutcomeEndsTheWaitAtOnce() throws Exception {
        UpdateRun run = new UpdateRun("i0:g2:y", 2, 1L);
        run.enter(Phase.PREPARING);
        CompletableFuture<UpdateRun.Snapshot> waiting =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return run.awaitOutcome(Duration.ofSeconds(30));
                            } catch (InterruptedException e) {
                                throw new IllegalStateException(e);
                            }
                        });
        Thread.sleep(100);
        assertThat(waiting).isNotDone();

        long finished = System.nanoTime();
        run.finish(Outcome.UPDATED, Phase.DONE, null, null);
        UpdateRun.Snapshot s = waiting.get(5, TimeUnit.SECONDS);

        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - finished)).isLessThan(5_000);
        assertThat(s.outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(s.phase()).isEqualTo(Phase.DONE);
    }

    @Test
    void aFinishedUpdateAnswersWithoutWaiting() throws Exception {
        UpdateRun run = new UpdateRun("i0:g2:z", 2, 1L);
        run.finish(Outcome.RESUMED_OLD, Phase.RESUMED_OLD, "i1", "prepare failed");

        long started = System.nanoTime();
        UpdateRun.Snapshot s = run.awaitOutcome(Duration.ofSeconds(30));

        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(5_000);
        assertThat(s.outcome()).isEqualTo(Outcome.RESUMED_OLD);
        assertThat(s.failingPeer()).isEqualTo("i1");
    }
}
