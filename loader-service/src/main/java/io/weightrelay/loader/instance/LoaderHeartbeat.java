package io.weightrelay.loader.instance;

import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlaneException;
import jakarta.annotation.PreDestroy;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Keeps the registered instance alive in control-api's loader registry (which forgets loaders whose
 * heartbeat is older than its TTL, and plans only for live ones).
 */
@Component
class LoaderHeartbeat {
    private static final Logger log = LoggerFactory.getLogger(LoaderHeartbeat.class);

    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "loader-heartbeat");
                        t.setDaemon(true);
                        return t;
                    });

    LoaderHeartbeat(InstanceService instances, ControlPlane control, LoaderProperties properties) {
        long period = properties.heartbeat().toMillis();
        timer.scheduleWithFixedDelay(
                () ->
                        instances
                                .current()
                                .ifPresent(
                                        instance -> {
                                            try {
                                                control.heartbeatLoader(instance.instanceId());
                                            } catch (ControlPlaneException e) {
                                                log.warn(
                                                        "heartbeat of {} failed: {}",
                                                        instance.instanceId(),
                                                        e.getMessage());
                                            } catch (RuntimeException e) {
                                                log.warn("heartbeat failed", e);
                                            }
                                        }),
                period,
                period,
                TimeUnit.MILLISECONDS);
    }

    @PreDestroy
    void stop() {
        timer.shutdownNow();
    }
}
