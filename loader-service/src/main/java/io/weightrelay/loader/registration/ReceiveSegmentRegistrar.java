package io.weightrelay.loader.registration;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.ForeignSegment;
import io.weightrelay.dataplane.MooncakeUnsupportedException;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.SegmentKind;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
    private static final Logger log = LoggerFactory.getLogger(ReceiveSegmentRegistrar.class);

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

    /**
     * Renews the segment's incarnation ({@link Dataplane#renewReceiveSegment}): the engine's
     * receive buffer keeps its file and its pages (no page is faulted again), transfers addressed
     * to the earlier registration are refused, and the bytes it held stay until the next update,
     * which writes and verifies every byte of a receive buffer before the engine is told to serve
     * it. Memory of a worker's own Transfer Engine is never renewed, nor a segment on the Mooncake
     * engine (it has no incarnation of ours): both are registered anew.
     */
    @Override
    public boolean renew(RegistrationKey from, RegistrationKey to, Segment handle) {
        if (from.foreign() != null || to.foreign() != null || foreign.containsKey(handle)) {
            return false;
        }
        try {
            dataplane.renewReceiveSegment(handle);
            return true;
        } catch (MooncakeUnsupportedException e) {
            return false;
        } catch (DataplaneException e) {
            log.warn(
                    "receive segment {} not renewed, made anew: {}", handle.name(), e.getMessage());
            return false;
        }
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
