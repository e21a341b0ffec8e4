package io.weightrelay.publisher.segment;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.weightrelay.dataplane.Counters;
import java.util.function.ToLongFunction;
import org.springframework.stereotype.Component;

/**
 * The bytes this publisher's data-plane engine moved since it started, per transport and direction,
 * read from the engine at each scrape: {@code relay.publisher.transport.bytes{transport=local|tcp,
 * direction=read|written|served_read|served_written}} ({@code served_*}: what its server moved for
 * peers, such as loaders reading this segment over tcp). A publish writes no tcp byte (promise 3 of
 * docs/architecture.md), so {@code transport="tcp",direction="written"} stays flat while one runs.
 */
@Component
final class TransportMeters implements MeterBinder {

    private final SegmentOwner owner;

    TransportMeters(SegmentOwner owner) {
        this.owner = owner;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        counter(registry, "local", "read", Counters::localRead);
        counter(registry, "local", "written", Counters::localWritten);
        counter(registry, "tcp", "read", Counters::tcpRead);
        counter(registry, "tcp", "written", Counters::tcpWritten);
        counter(registry, "tcp", "served_read", Counters::tcpServedRead);
        counter(registry, "tcp", "served_written", Counters::tcpServedWritten);
    }

    private void counter(
            MeterRegistry registry,
            String transport,
            String direction,
            ToLongFunction<Counters> bytes) {
        FunctionCounter.builder("relay.publisher.transport.bytes", owner, o -> read(o, bytes))
                .baseUnit("bytes")
                .description("bytes this publisher's engine moved, per transport and direction")
                .tag("transport", transport)
                .tag("direction", direction)
                .register(registry);
    }

    /** NaN once the engine is closed (a scrape during shutdown), which Prometheus skips. */
    private static double read(SegmentOwner owner, ToLongFunction<Counters> bytes) {
        try {
            return bytes.applyAsLong(owner.counters());
        } catch (RuntimeException closed) {
            return Double.NaN;
        }
    }
}
