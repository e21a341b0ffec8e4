package io.weightrelay.publisher.staging;

import io.weightrelay.dataplane.StoreClient;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * Where staged bytes live and how they become stored objects: the bytes of a {@link StagingArea}
 * without its bookkeeping (reservation ids, claims, timeouts, the byte cap). Thread safe.
 */
interface StagingSpace extends AutoCloseable {

    /** The shared-memory file ranks map; staging offsets are offsets in it. */
    Path path();

    /** Size of that file. */
    long fileSize();

    /**
     * Reserves {@code size} contiguous bytes (a multiple of {@link StagingArea#ALIGNMENT}), at
     * {@code end} of the space where that matters: in a store segment, whose objects outlive the
     * reservation (see {@link StagingArea#end}).
     *
     * @return the offset, or -1 when no contiguous room is left right now
     */
    long allocate(long size, StoreClient.End end);

    /** Frees a block {@link #allocate} returned and no {@link #store} consumed. */
    void release(long offset, long size);

    /** Bytes not reserved. */
    long freeBytes();

    /** A view of [offset, offset + length) of the file, without a copy. */
    ByteBuffer bytes(long offset, int length);

    /**
     * Stores pieces of the block at {@code offset} as objects; nothing of them stays stored when
     * this throws.
     *
     * @return true when the block became the objects' memory (it must not be released), false when
     *     the bytes were copied out (release the block as usual)
     */
    boolean store(long offset, long size, List<StagingArea.Piece> pieces, Executor puts);

    /**
     * Whether a narrowing conversion writes into a block of its own ({@link #allocateOutput}) that
     * is then stored in place, instead of converting in place in staging.
     */
    default boolean convertsIntoOutputBlocks() {
        return false;
    }

    /**
     * Allocates a block for converted bytes that become objects where they are written.
     *
     * @throws io.weightrelay.dataplane.SegmentFullException when there is no room
     */
    default long allocateOutput(long size, StoreClient.End end) {
        throw new UnsupportedOperationException(
                "no output blocks in " + getClass().getSimpleName());
    }

    /** Stores pieces of an output block in place; the block is used up either way. */
    default void storeOutput(long block, List<StagingArea.Piece> pieces) {
        throw new UnsupportedOperationException(
                "no output blocks in " + getClass().getSimpleName());
    }

    /** Frees an output block that was not stored. */
    default void releaseOutput(long block) {
        throw new UnsupportedOperationException(
                "no output blocks in " + getClass().getSimpleName());
    }

    /**
     * Reads stored objects into the space, each whole at its piece's offset: the reverse of {@link
     * #store}, for staging apart from the store (an owner on Mooncake reading what its agent
     * holds).
     *
     * @return per piece, in order, the bytes read (its size) or a negative code
     */
    default long[] load(List<StagingArea.Piece> pieces) {
        throw new UnsupportedOperationException(
                "no reads from the store into " + getClass().getSimpleName());
    }

    @Override
    void close();
}
