package io.weightrelay.control.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.ControlApiTestSupport;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.ApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Loaders registering against a model that already has an active generation (a restarted or added
 * engine): once the group's registrations settle, its plan is resolved in the background, once for
 * the whole burst, so the group's first prepare finds it instead of computing it while every loader
 * of the group waits. A context of its own: the shared one leaves this off.
 */
class EagerPlansAtRegistrationTest extends ControlApiTestSupport {
    private static final String GROUP = "grp";
    private static final long SETTLE_MS = 400;

    @DynamicPropertySource
    static void settle(DynamicPropertyRegistry registry) {
        registry.add("relay.plans.eager-settle", () -> SETTLE_MS + "ms");
    }

    @Autowired MeterRegistry meters;
    @Autowired ApplicationContext context;

    private double computed() {
        return meters.counter("relay.plans.cache", "result", "miss").count();
    }

    @Test
    void aGroupRegisteringAgainstTheActiveGenerationIsPlannedOnceItSettles() throws Exception {
        String model = newModel();
        long g = publish(model, 1);
        EagerPlanWaits.awaitCommitResolutions(context);
        double before = computed();

        // A burst: each registration restarts the wait, so the plan is computed once, for all
        // three.
        for (String instance : new String[] {"a", "b", "c"}) {
            registerLoader(
                    instance + "-" + model, compatLoader(model, GROUP, "node-" + instance, 1));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (computed() == before && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        // Longer than a settle: a second computation (one per registration) would show by now.
        Thread.sleep(3 * SETTLE_MS);

        assertThat(computed() - before).isEqualTo(1.0);
        PlanSummary plan = resolvePlan(model, g, GROUP);
        assertThat(plan.getCached()).isTrue();
        assertThat(plan.getInstances()).containsExactly("a-" + model, "b-" + model, "c-" + model);
    }

    @Test
    void aGroupRegisteringBeforeAnyGenerationIsLeftToTheOpen() throws Exception {
        String model = newModel();
        double before = computed();

        registerLoader("a-" + model, compatLoader(model, GROUP, "node-a", 1));
        Thread.sleep(3 * SETTLE_MS);

        assertThat(computed()).isEqualTo(before);
    }
}
