package io.weightrelay.publisher.segment;

import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.service.dataplane.DataplaneSettings;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.core.env.Environment;

/**
 * Keeps this segment registered as a live owner in control-api's registry (register once the
 * service is ready, heartbeat within the TTL, register again when the registry forgot it). A
 * control-api that is away only delays this; publishing does not depend on it.
 */
final class SegmentRegistrar implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SegmentRegistrar.class);

    private final SegmentOwner owner;
    private final SegmentProperties properties;
    private final ControlPlane control;
    private final DataplaneSettings settings;
    private final Environment environment;
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "segment-heartbeat");
                        t.setDaemon(true);
                        return t;
                    });
    private volatile boolean registered;

    SegmentRegistrar(
            SegmentOwner owner,
            SegmentProperties properties,
            ControlPlane control,
            DataplaneSettings settings,
            Environment environment) {
        this.owner = owner;
        this.properties = properties;
        this.control = control;
        this.settings = settings;
        this.environment = environment;
    }

    @EventListener(ApplicationReadyEvent.class)
    void start() {
        if (!properties.register()) {
            return;
        }
        long period = properties.heartbeat().toMillis();
        timer.scheduleWithFixedDelay(this::beat, 0, period, TimeUnit.MILLISECONDS);
    }

    private void beat() {
        try {
            if (!registered || !control.heartbeatSegment(owner.segmentName())) {
                control.registerSegment(
                        owner.segmentName(),
                        owner.node(),
                        owner.endpoint(),
                        owner.size(),
                        adminUrl());
                if (!registered) {
                    log.info("segment '{}' registered with control-api", owner.segmentName());
                }
                registered = true;
            }
        } catch (RuntimeException e) {
            registered = false;
            log.warn("segment '{}' not registered yet: {}", owner.segmentName(), e.getMessage());
        }
    }

    /**
     * {@code relay.segment.admin-url}, else derived from {@code relay.dataplane.advertise-host}.
     */
    private String adminUrl() {
        int port =
                environment.getProperty(
                        "local.server.port",
                        Integer.class,
                        environment.getProperty("server.port", Integer.class, 8081));
        return settings.advertisedUrl(properties.adminUrl(), port);
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
