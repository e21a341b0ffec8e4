package io.weightrelay.loader.update;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.loader.pipeline.ApplyCounts;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * What a scrape of a loader shows about its updates: {@code relay.loader.updates{outcome}}, each
 * phase's duration ({@code relay.loader.update.phase{phase}}), the update as fetch, install and the
 * engine's pause ({@code relay.loader.update.split{part=fetch|install|pause}}), the bytes of each
 * stage ({@code relay.loader.bytes{stage=read|pushed|fanned_out|received}}) and the bytes per
 * transport ({@code relay.loader.transport.bytes{transport=local|tcp, direction=read|written}}).
 * Meters have no generation tag, so their number does not grow with every update.
 */
final class UpdateMetrics {

    private final MeterRegistry registry;

    UpdateMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    void finished(UpdateRun.Snapshot run) {
        Counter.builder("relay.loader.updates")
                .tag("outcome", run.outcome().name().toLowerCase(Locale.ROOT))
                .register(registry)
                .increment();
        for (Map.Entry<UpdateRun.Phase, Long> phase : run.durationsMs().entrySet()) {
            Timer.builder("relay.loader.update.phase")
                    .tag("phase", phase.getKey().name().toLowerCase(Locale.ROOT))
                    .register(registry)
                    .record(Duration.ofMillis(phase.getValue()));
        }
        split("fetch", run.split().fetchMs());
        split("install", run.split().installMs());
        split("pause", run.split().pauseMs());
        ApplyCounts counts = run.counts();
        if (counts == null) {
            return;
        }
        bytes("read", counts.bytesRead());
        bytes("pushed", counts.bytesPushed());
        bytes("fanned_out", counts.bytesFannedOut());
        bytes("received", counts.bytesReceived());
        bytes("sent_summed", counts.sentSummedBytes());
        bytes("sent_twinned", counts.sentTwinnedBytes());
        Counters transport = counts.transport();
        if (transport != null) {
            transport("local", "read", transport.localRead());
            transport("local", "written", transport.localWritten());
            transport("tcp", "read", transport.tcpRead());
            transport("tcp", "written", transport.tcpWritten());
        }
    }

    private void split(String part, Long ms) {
        if (ms != null) {
            Timer.builder("relay.loader.update.split")
                    .tag("part", part)
                    .register(registry)
                    .record(Duration.ofMillis(ms));
        }
    }

    private void bytes(String stage, long n) {
        Counter.builder("relay.loader.bytes")
                .baseUnit("bytes")
                .tag("stage", stage)
                .register(registry)
                .increment(n);
    }

    private void transport(String transport, String direction, long n) {
        Counter.builder("relay.loader.transport.bytes")
                .baseUnit("bytes")
                .tag("transport", transport)
                .tag("direction", direction)
                .register(registry)
                .increment(n);
    }
}
