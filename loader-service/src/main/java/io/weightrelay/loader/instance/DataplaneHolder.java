package io.weightrelay.loader.instance;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.registration.ReceiveSegmentRegistrar;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.loader.registration.ServingCopies;
import io.weightrelay.service.dataplane.DataplaneSettings;
import jakarta.annotation.PreDestroy;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * The loader's data plane, configured by {@code relay.dataplane.*} and opened with the node label
 * of the first registered instance (the node decides the transports, so it cannot change while the
 * process lives; when {@code relay.dataplane.node-label} is set, an instance on another node is
 * refused), and the registration manager over it.
 */
@Component
public class DataplaneHolder {
    private static final Logger log = LoggerFactory.getLogger(DataplaneHolder.class);

    private final DataplaneSettings settings;
    private Dataplane dataplane;
    private RegistrationManager<Segment> registrations;
    private boolean closed;

    public DataplaneHolder(DataplaneSettings settings) {
        this.settings = settings;
    }

    /**
     * Opens the data plane as the loader starts when its node is configured ({@code
     * relay.dataplane.node-label}), on a thread of its own, so the engine's registration does not
     * wait for it: loading the native engine, starting its server and connecting to Redis took 3-9
     * s of a registration on the shared two cores, all of it before the engine's first weights.
     * Best effort: a failure is logged and the registration opens it (or fails naming why).
     */
    @EventListener(ApplicationReadyEvent.class)
    public void openAhead() {
        String node = settings.nodeLabel();
        if (node == null) {
            return;
        }
        Thread opener =
                new Thread(
                        () -> {
                            long started = System.nanoTime();
                            try {
                                open(node);
                                log.info(
                                        "data plane of node {} opened ahead of the registration in"
                                                + " {} ms",
                                        node,
                                        (System.nanoTime() - started) / 1_000_000);
                            } catch (RuntimeException e) {
                                log.warn(
                                        "data plane of node {} not opened ahead ({}); the"
                                                + " registration opens it",
                                        node,
                                        e.toString());
                            }
                        },
                        "dataplane-open");
        opener.setDaemon(true);
        opener.start();
    }

    /** The data plane for this node, opened on first use. */
    public synchronized Dataplane open(String node) {
        if (settings.nodeLabel() != null && !settings.nodeLabel().equals(node)) {
            throw InstanceProblems.NODE_CHANGED.exception(
                    "this loader runs on node "
                            + settings.nodeLabel()
                            + " (relay.dataplane.node-label), not "
                            + node);
        }
        if (closed) {
            throw new IllegalStateException("the loader is shutting down: no data plane opens");
        }
        if (dataplane == null) {
            dataplane = Dataplane.open(settings.config(node));
            registrations = new RegistrationManager<>(new ReceiveSegmentRegistrar(dataplane));
        } else if (!dataplane.nodeLabel().equals(node)) {
            throw InstanceProblems.NODE_CHANGED.exception(
                    "this loader runs on node " + dataplane.nodeLabel() + ", not " + node);
        }
        return dataplane;
    }

    /** The open data plane, or null. */
    public synchronized Dataplane dataplane() {
        return dataplane;
    }

    /** The registration manager, or null before the data plane opened. */
    public synchronized RegistrationManager<Segment> registrations() {
        return registrations;
    }

    @PreDestroy
    public synchronized void close() {
        closed = true;
        List<String> left = ServingCopies.deleteAll();
        if (!left.isEmpty()) {
            log.warn("serving copies left in shared memory: {}", left);
        }
        if (dataplane != null) {
            dataplane.close();
            dataplane = null;
        }
    }
}
