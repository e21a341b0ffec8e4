package io.weightrelay.dataplane;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A segment name this data plane published for memory of another process ({@link
 * Dataplane#attachForeignSegment}): peers' writes and reads addressed to the name go to that
 * process's own Transfer Engine. This process holds none of the bytes: it reads them like any peer,
 * into its {@link #readBack()} segment, local memory of the same size.
 *
 * <p>Notifies: a write with notify into the name notifies this data plane's engine, not the other
 * process's (which runs no weight-relay and counts nothing), once the bytes landed there; so the
 * owner of the name waits for its notifies as for a receive segment's.
 *
 * <p>Ownership: owned by the caller, closed at the latest by its {@link Dataplane}. {@link
 * #close()} (idempotent) unpublishes the name and closes the read-back segment; the memory stays
 * the other process's. Thread safe.
 */
public final class ForeignSegment implements AutoCloseable {
    private final String name;
    private final long size;
    private final ForeignBuffer buffer;
    private final Segment readBack;
    private final Runnable unpublish;
    private final AtomicBoolean closed = new AtomicBoolean();

    ForeignSegment(
            String name, long size, ForeignBuffer buffer, Segment readBack, Runnable unpublish) {
        this.name = name;
        this.size = size;
        this.buffer = buffer;
        this.readBack = readBack;
        this.unpublish = unpublish;
    }

    /** The segment name peers address. */
    public String name() {
        return name;
    }

    /** Bytes of the foreign memory that the name covers. */
    public long size() {
        return size;
    }

    /** Where the bytes are. */
    public ForeignBuffer buffer() {
        return buffer;
    }

    /**
     * A receive segment of this data plane, {@link #size()} bytes, named {@code <name>.readback}:
     * where the owner reads the foreign bytes to look at them ({@code
     * TransferRequest.read(readBack, offset, name(), offset, length)}), and where the one-byte
     * writes that carry notifies land. What it holds is only what was last read into it.
     */
    public Segment readBack() {
        return readBack;
    }

    public boolean isClosed() {
        return closed.get();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                unpublish.run();
            } finally {
                readBack.close();
            }
        }
    }

    @Override
    public String toString() {
        return "ForeignSegment[" + name + ", " + size + " bytes at " + buffer + "]";
    }
}
