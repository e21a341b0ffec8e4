package io.weightrelay.control.plan;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.springframework.context.ApplicationContext;

/**
 * Waits for the plans an open or a commit resolves in the background ({@link EagerPlans}) to end. A
 * test that counts plan computations waits for it after it publishes: a commit's resolution still
 * queued when the test registers its loaders would find their group and plan it, and the test's own
 * requests would then all be answered from the cache.
 */
public final class EagerPlanWaits {

    private EagerPlanWaits() {}

    /**
     * Returns once no open's or commit's resolution was queued or running in two checks running.
     */
    public static void awaitCommitResolutions(ApplicationContext context)
            throws InterruptedException {
        EagerPlans eager = context.getBean(EagerPlans.class);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        int quietChecks = 0;
        while (quietChecks < 2 && System.nanoTime() < deadline) {
            quietChecks = eager.idle() ? quietChecks + 1 : 0;
            Thread.sleep(25);
        }
        assertThat(quietChecks).as("the commit's plan resolutions ended").isEqualTo(2);
    }
}
