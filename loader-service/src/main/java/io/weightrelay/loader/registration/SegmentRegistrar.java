package io.weightrelay.loader.registration;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.Segment;

/**
 * Registers a base as a data-plane segment of this process: shared memory the engine maps (its
 * receive buffers) or the loader's read staging, registered with the Transfer Engine (peers write
 * into it) and usable as a store read destination.
 */
public final class SegmentRegistrar implements Registrar<Segment> {
    private final Dataplane dataplane;

    public SegmentRegistrar(Dataplane dataplane) {
        this.dataplane = dataplane;
    }

    @Override
    public Segment register(RegistrationKey key) {
        return dataplane.createSegment(key.base(), key.size());
    }

    @Override
    public void unregister(RegistrationKey key, Segment handle) {
        handle.close();
    }
}
