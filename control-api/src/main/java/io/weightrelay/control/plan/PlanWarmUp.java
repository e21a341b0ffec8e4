package io.weightrelay.control.plan;

import io.weightrelay.service.lifecycle.StartupWarmUp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.stereotype.Component;

/**
 * Runs {@link PlanService#warmUp()} at start-up, before readiness (Spring Boot reports ready once
 * the runners returned). A cold JVM computed the lab's first plan in 2.2 s that takes well under a
 * second warm, while every loader of the group waited on it. A failure only costs the warm-up.
 */
@Component
class PlanWarmUp implements ApplicationRunner {

    private static final Logger log = LoggerFactory.getLogger(PlanWarmUp.class);

    private final PlanService plans;
    private final PlanProperties properties;

    PlanWarmUp(PlanService plans, PlanProperties properties) {
        this.plans = plans;
        this.properties = properties;
    }

    @Override
    public void run(ApplicationArguments args) {
        if (!properties.warmUp()) {
            return;
        }
        StartupWarmUp.run(
                log,
                "the plan computation",
                () -> {
                    plans.warmUp();
                    return PlanService.WARM_UP_MODEL;
                },
                (model, ms) ->
                        log.info(
                                "plan computation warmed up in {} ms (model {}, a synthetic group"
                                        + " per mode, nothing stored)",
                                ms,
                                model));
    }
}
