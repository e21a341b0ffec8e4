package io.weightrelay.publisher.publish;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.stereotype.Component;

/**
 * Byte counters per model and stage ({@code relay.publish.bytes}, stage = staged, converted,
 * stored_local, stored_remote) and object counts. Per-generation figures are in the publish status;
 * meters stay per model so their number does not grow with every generation.
 */
@Component
public final class PublishMetrics {

    private final MeterRegistry registry;

    public PublishMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    void batch(String model, GenerationState.BatchTotals totals) {
        bytes(model, "staged").increment(totals.bytesStaged());
        bytes(model, "converted").increment(totals.bytesConverted());
        bytes(model, "stored_local").increment(totals.bytesStoredLocal());
        bytes(model, "stored_remote").increment(totals.bytesStoredRemote());
        Counter.builder("relay.publish.objects")
                .tag("model", model)
                .register(registry)
                .increment(totals.objects());
    }

    private Counter bytes(String model, String stage) {
        return Counter.builder("relay.publish.bytes")
                .baseUnit("bytes")
                .tag("model", model)
                .tag("stage", stage)
                .register(registry);
    }
}
