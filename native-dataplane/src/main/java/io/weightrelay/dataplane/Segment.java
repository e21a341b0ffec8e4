package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/**
 * A named region of this process's shared memory (a file under the shm directory, pre-faulted when
 * created), registered with the engine and published in the metadata store: peers read and write it
 * at (name, offset), this process uses it as local memory, and, when its {@link #kind()} is {@link
 * SegmentKind#STORE}, the store allocates objects in it.
 *
 * <p>Ownership: created by {@link Dataplane#createSegment} or {@link
 * Dataplane#createReceiveSegment}; owned by the caller, and closed at the latest by its {@link
 * Dataplane}. {@link #close()} unpublishes it, unmaps it and removes its file; objects still stored
 * in it become unreadable. Thread safe.
 */
public final class Segment implements LocalMemory, AutoCloseable {
    private final LocalMemoryOwner owner;
    private final String name;
    private final long size;
    private final long address;
    private final Path shmPath;
    private final SegmentKind kind;
    private final List<String> purgedOnCreate;
    private final AtomicBoolean closed = new AtomicBoolean();

    Segment(
            LocalMemoryOwner owner,
            String name,
            long size,
            long address,
            Path shmPath,
            SegmentKind kind,
            List<String> purgedOnCreate) {
        this.owner = owner;
        this.name = name;
        this.size = size;
        this.address = address;
        this.shmPath = shmPath;
        this.kind = kind;
        this.purgedOnCreate = purgedOnCreate;
    }

    /**
     * The object keys a previous owner of this name had stored in it, whose directory entries were
     * removed when this segment was created (its bytes are gone with the old file). Empty for a
     * first creation and for receive segments. The owner must tell whoever tracks those objects'
     * generations that they are unreadable.
     */
    public List<String> purgedOnCreate() {
        return purgedOnCreate;
    }

    /** Store capacity or a transfer target only. */
    public SegmentKind kind() {
        return kind;
    }

    /** The segment's name, unique per key prefix. */
    public String name() {
        return name;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public String describe() {
        return "segment '" + name + "'";
    }

    /** The shared-memory file that backs it (other processes of the node map it). */
    public Path shmPath() {
        return shmPath;
    }

    /** Node label of the owning engine. */
    public String nodeLabel() {
        return owner.nodeLabel();
    }

    /**
     * Bytes not allocated to stored objects; always 0 for a {@link SegmentKind#RECEIVE} segment.
     */
    public long freeBytes() {
        checkOpen();
        return owner.freeBytes(name);
    }

    /**
     * A view of the whole segment without copies, valid until the segment is closed (touching it
     * after close is undefined). Segments above 2 GiB use {@link #byteBuffer(long, int)}.
     */
    public ByteBuffer byteBuffer() {
        if (size > Integer.MAX_VALUE) {
            throw new OutOfBoundsException(describe(), 0, size, Integer.MAX_VALUE);
        }
        return byteBuffer(0, (int) size);
    }

    /** A view of [offset, offset + length), valid until the segment is closed. */
    public ByteBuffer byteBuffer(long offset, int length) {
        checkOpen();
        if (offset < 0 || length < 0 || offset > size - length) {
            throw new OutOfBoundsException(describe(), offset, length, size);
        }
        return new DpNative.RawBytes(address + offset, length).asByteBuffer();
    }

    /**
     * Copies [offset, offset + {@code target.remaining()}) of this segment into {@code target} (a
     * direct buffer, such as a mapping of another file) with the C library's {@code memcpy}, which
     * moves large copies faster than a Java bulk put (non-temporal stores past the caches), and
     * advances its position.
     *
     * @throws IllegalArgumentException if {@code target} is not direct
     */
    public void copyOut(long offset, ByteBuffer target) {
        if (!target.isDirect()) {
            throw new IllegalArgumentException(
                    "copying out of " + describe() + " needs a direct buffer");
        }
        int length = target.remaining();
        checkOpen();
        if (offset < 0 || offset > size - length) {
            throw new OutOfBoundsException(describe(), offset, length, size);
        }
        try (BytePointer to = new BytePointer(target)) {
            Pointer.memcpy(
                    to.position(target.position()),
                    new DpNative.RawBytes(address + offset, length),
                    length);
        }
        target.position(target.position() + length);
    }

    long address() {
        return address;
    }

    boolean ownedBy(TransferEngine engine) {
        return owner.engine() == engine;
    }

    boolean isClosed() {
        return closed.get();
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new DataplaneClosedException(describe());
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            owner.destroySegment(this);
        }
    }

    @Override
    public String toString() {
        return "Segment[" + name + ", " + kind + ", " + size + " bytes, " + shmPath + "]";
    }
}
