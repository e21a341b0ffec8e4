package io.weightrelay.loader.instance;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.registration.ReceiveSegmentRegistrar;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.service.dataplane.DataplaneSettings;
import jakarta.annotation.PreDestroy;
import org.springframework.stereotype.Component;

/**
 * The loader's data plane, configured by {@code relay.dataplane.*} and opened with the node label
 * of the first registered instance (the node decides the transports, so it cannot change while the
 * process lives; when {@code relay.dataplane.node-label} is set, an instance on another node is
 * refused), and the registration manager over it.
 */
@Component
public class DataplaneHolder {
    private final DataplaneSettings settings;
    private Dataplane dataplane;
    private RegistrationManager<Segment> registrations;

    public DataplaneHolder(DataplaneSettings settings) {
        this.settings = settings;
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
        if (dataplane != null) {
            dataplane.close();
            dataplane = null;
        }
    }
}
