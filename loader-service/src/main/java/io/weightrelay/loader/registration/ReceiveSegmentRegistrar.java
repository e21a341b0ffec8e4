package io.weightrelay.loader.registration;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.SegmentKind;

/**
 * Registers a base as a data-plane segment of this process: shared memory the engine maps (its
 * receive buffers) or the loader's read staging, registered with the Transfer Engine (peers write
 * into it) and usable as a store read destination.
 *
 * <p>Every such segment is a {@linkplain SegmentKind#RECEIVE receive segment}, a transfer target
 * and never store capacity: its bytes are the weights the engine is about to read (or staging on
 * their way there), so the store must never place an object in it, not even when the publishers'
 * segments are full.
 */
public final class ReceiveSegmentRegistrar implements Registrar<Segment> {
    private final Dataplane dataplane;

    public ReceiveSegmentRegistrar(Dataplane dataplane) {
        this.dataplane = dataplane;
    }

    @Override
    public Segment register(RegistrationKey key) {
        return dataplane.createReceiveSegment(key.base(), key.size());
    }

    @Override
    public void unregister(RegistrationKey key, Segment handle) {
        ServingCopies.delete(handle.shmPath());
        handle.close();
    }
}
