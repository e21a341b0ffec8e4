package io.weightrelay.service.lifecycle;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * With {@code relay.parent-pid} set, the service stops (gracefully, exit code 3) once that process
 * has ended: the lab and the test suites pass their own pid, so services they started do not
 * outlive them when they are killed. Unset (a deployment under a real supervisor), nothing watches.
 */
@AutoConfiguration
@ConditionalOnProperty("relay.parent-pid")
public class ParentWatchAutoConfiguration {

    /** The exit code of a service whose parent ended. */
    static final int PARENT_GONE = 3;

    @Bean
    ParentWatch parentWatch(
            @Value("${relay.parent-pid}") long pid, ConfigurableApplicationContext context) {
        return new ParentWatch(
                pid, () -> System.exit(SpringApplication.exit(context, () -> PARENT_GONE)));
    }
}
