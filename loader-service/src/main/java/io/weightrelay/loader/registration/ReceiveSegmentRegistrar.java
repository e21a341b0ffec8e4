package io.weightrelay.loader.registration;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ForeignSegment;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.SegmentKind;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Registers a base as a data-plane segment of this process: shared memory the engine maps (its
 * receive buffers) or the loader's read staging, registered with the Transfer Engine (peers write
 * into it) and usable as a store read destination.
 *
 * <p>Every such segment is a {@linkplain SegmentKind#RECEIVE receive segment}, a transfer target
 * and never store capacity: its bytes are the weights the engine is about to read (or staging on
 * their way there), so the store must never place an object in it, not even when the publishers'
 * segments are full.
 *
 * <p>A base in a worker's own Transfer Engine ({@link RegistrationKey#foreign()}) is published as
 * that memory ({@link Dataplane#attachForeignSegment}), and the handle is its {@linkplain
 * ForeignSegment#readBack() read-back segment}: the loader holds none of the worker's bytes, so it
 * reads them there to prove what landed and to copy them on to the node's other workers.
 */
public final class ReceiveSegmentRegistrar implements Registrar<Segment> {
    private final Dataplane dataplane;
    private final Map<Segment, ForeignSegment> foreign = new ConcurrentHashMap<>();

    public ReceiveSegmentRegistrar(Dataplane dataplane) {
        this.dataplane = dataplane;
    }

    @Override
    public Segment register(RegistrationKey key) {
        if (key.foreign() == null) {
            return dataplane.createReceiveSegment(key.base(), key.size());
        }
        ForeignSegment attached =
                dataplane.attachForeignSegment(key.base(), key.size(), key.foreign());
        foreign.put(attached.readBack(), attached);
        return attached.readBack();
    }

    @Override
    public void unregister(RegistrationKey key, Segment handle) {
        ForeignSegment attached = foreign.remove(handle);
        if (attached != null) {
            attached.close(); // its read-back segment with it
        } else {
            ServingCopies.delete(handle.shmPath());
            handle.close();
        }
    }
}
