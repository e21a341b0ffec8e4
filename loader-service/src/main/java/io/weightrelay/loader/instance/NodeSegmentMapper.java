package io.weightrelay.loader.instance;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.service.concurrent.DaemonThreads;
import jakarta.annotation.PreDestroy;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Maps the segments of this loader's node (the receive segments of the other loaders beside it, a
 * publisher's segment on the same node) as soon as they register, not inside the first update that
 * writes into them: mapping a same-node segment populates its pages, which took a fifth of the CPU
 * of a cold prepare. Every {@code relay.loader.map-node-segments-every} once the data plane is
 * open; a look costs one Redis read unless a segment registered since the last one ({@link
 * io.weightrelay.dataplane.TransferEngine#mapNodeSegments}). Best effort: what is not mapped here
 * the update maps, or fails naming.
 */
@Component
class NodeSegmentMapper {
    private static final Logger log = LoggerFactory.getLogger(NodeSegmentMapper.class);

    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("node-segments"));
    private final DataplaneHolder dataplane;

    NodeSegmentMapper(DataplaneHolder dataplane, LoaderProperties properties) {
        this.dataplane = dataplane;
        long period = properties.mapNodeSegmentsEvery().toMillis();
        if (period > 0) {
            timer.scheduleWithFixedDelay(this::look, period, period, TimeUnit.MILLISECONDS);
        }
    }

    void look() {
        Dataplane dp = dataplane.dataplane();
        if (dp == null) {
            return;
        }
        try {
            long started = System.nanoTime();
            int mapped = dp.engine().mapNodeSegments();
            if (mapped > 0) {
                log.info(
                        "mapped {} segment(s) of node {} ahead of the updates in {} ms",
                        mapped,
                        dp.nodeLabel(),
                        (System.nanoTime() - started) / 1_000_000);
            }
        } catch (RuntimeException e) {
            log.debug("segments of this node not mapped ahead: {}", e.toString());
        }
    }

    @PreDestroy
    void stop() {
        timer.shutdownNow();
    }
}
