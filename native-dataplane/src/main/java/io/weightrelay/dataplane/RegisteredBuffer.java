package io.weightrelay.dataplane;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A direct {@link ByteBuffer} registered with the engine as local memory (staging for puts and
 * gets). The caller keeps owning the buffer's memory; this handle keeps it reachable until closed.
 * {@link #close()} unregisters it (transfers still using it fail with {@link
 * UnregisteredBufferException}); do not close while transfers on it are in flight. Thread safe.
 */
public final class RegisteredBuffer implements LocalMemory, AutoCloseable {
    private final LocalMemoryOwner owner;
    private final ByteBuffer buffer;
    private final long address;
    private final AtomicBoolean closed = new AtomicBoolean();

    RegisteredBuffer(LocalMemoryOwner owner, ByteBuffer buffer, long address) {
        this.owner = owner;
        this.buffer = buffer;
        this.address = address;
    }

    @Override
    public long size() {
        return buffer.capacity();
    }

    @Override
    public String describe() {
        return "registered buffer 0x" + Long.toHexString(address) + "+" + buffer.capacity();
    }

    /** The registered buffer (a duplicate: position and limit are the caller's). */
    public ByteBuffer byteBuffer() {
        return buffer.duplicate().clear();
    }

    long address() {
        return address;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            owner.unregisterBuffer(this);
        }
    }
}
