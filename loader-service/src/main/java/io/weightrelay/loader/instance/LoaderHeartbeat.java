package io.weightrelay.loader.instance;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.service.concurrent.DaemonThreads;
import jakarta.annotation.PreDestroy;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Keeps the registered instance alive in control-api's loader registry (which forgets loaders whose
 * heartbeat is older than its TTL, and plans only for live ones). When control-api answers that it
 * does not know the loader (Redis lost its data, or the loader was away past the TTL), the instance
 * is registered again with what its engine registered ({@link InstanceService#registerAgain}); and
 * every beat publishes again the descriptors of the loader's receive segments that Redis lost, or
 * that a restarted Mooncake agent moved ({@link Dataplane#reannounceSegments}), so that peers can
 * write into them.
 */
@Component
class LoaderHeartbeat {
    private static final Logger log = LoggerFactory.getLogger(LoaderHeartbeat.class);

    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("loader-heartbeat"));
    private final InstanceService instances;
    private final ControlPlane control;
    private final DataplaneHolder dataplane;

    LoaderHeartbeat(
            InstanceService instances,
            ControlPlane control,
            DataplaneHolder dataplane,
            LoaderProperties properties) {
        this.instances = instances;
        this.control = control;
        this.dataplane = dataplane;
        long period = properties.heartbeat().toMillis();
        timer.scheduleWithFixedDelay(this::beat, period, period, TimeUnit.MILLISECONDS);
    }

    void beat() {
        instances
                .current()
                .ifPresent(
                        instance -> {
                            reannounce();
                            try {
                                control.heartbeatLoader(instance.instanceId());
                            } catch (ControlPlaneException e) {
                                if ("loader-not-found".equals(e.problemType())) {
                                    registerAgain(instance.instanceId());
                                } else {
                                    log.warn(
                                            "heartbeat of {} failed: {}",
                                            instance.instanceId(),
                                            e.getMessage());
                                }
                            } catch (RuntimeException e) {
                                log.warn("heartbeat failed", e);
                            }
                        });
    }

    private void reannounce() {
        Dataplane dp = dataplane.dataplane();
        if (dp == null) {
            return;
        }
        try {
            List<String> again = dp.reannounceSegments();
            if (!again.isEmpty()) {
                log.warn(
                        "receive segments {} published again: Redis had lost their descriptors,"
                                + " or the engine behind them was started again (a Mooncake agent"
                                + " that died maps them at new addresses)",
                        again);
            }
        } catch (RuntimeException e) {
            log.warn("cannot check the receive segments' descriptors: {}", e.getMessage());
        }
    }

    private void registerAgain(String instance) {
        try {
            long epoch = instances.registerAgain();
            if (epoch >= 0) {
                log.warn(
                        "control-api no longer knew loader {} (Redis lost its data, or the"
                                + " registry's TTL passed): registered again at epoch {}",
                        instance,
                        epoch);
            }
        } catch (RuntimeException e) {
            log.warn("loader {} not registered again yet: {}", instance, e.getMessage());
        }
    }

    @PreDestroy
    void stop() {
        timer.shutdownNow();
    }
}
