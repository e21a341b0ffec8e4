package io.weightrelay.loader.update;

import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.pipeline.ApplyFailure;

/**
 * A failure, named: the peer at fault (a loader instance, a worker, a store object, or control-api)
 * and what went wrong, as an update's run and its FAILED report carry them.
 */
record NamedFailure(String peer, String message) {

    /** The peer a failure names when control-api is at fault (or cannot say who is). */
    static final String CONTROL_API = "control-api";

    /**
     * Whom {@code e} blames: the peer an {@link ApplyFailure} names, control-api for a call to it
     * that failed, else this loader itself.
     */
    static NamedFailure of(Instance instance, RuntimeException e) {
        if (e instanceof ApplyFailure a) {
            return new NamedFailure(a.failingPeer(), a.getMessage());
        }
        if (e instanceof ControlPlaneException) {
            return new NamedFailure(CONTROL_API, e.getMessage());
        }
        return new NamedFailure(instance.instanceId(), String.valueOf(e));
    }
}
