package io.weightrelay.control.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.plan.Planner;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/** The planner's sizes are settings with the planner's own defaults, checked at start-up. */
class PlanPropertiesTest {

    private static PlanProperties bind(Map<String, String> settings) {
        return new Binder(new MapConfigurationPropertySource(settings))
                .bindOrCreate("relay.plans", PlanProperties.class);
    }

    @Test
    void unsetSizesAreThePlannersDefaults() {
        assertThat(bind(Map.of()).options()).isEqualTo(Planner.Options.DEFAULT);
    }

    @Test
    void sizesAreReadFromTheirProperties() {
        PlanProperties p =
                bind(
                        Map.of(
                                "relay.plans.batch-bytes",
                                "32MB",
                                "relay.plans.read-max-bytes",
                                "8MB"));
        assertThat(p.options()).isEqualTo(new Planner.Options(8L << 20, 32L << 20));
    }

    @Test
    void aReadLargerThanABatchFailsNamingBothProperties() {
        assertThatThrownBy(
                        () ->
                                bind(
                                        Map.of(
                                                "relay.plans.batch-bytes",
                                                "4MB",
                                                "relay.plans.read-max-bytes",
                                                "16MB")))
                .isInstanceOf(BindException.class)
                .hasStackTraceContaining(
                        "relay.plans.read-max-bytes (16777216B) and relay.plans.batch-bytes"
                                + " (4194304B)");
    }
}
