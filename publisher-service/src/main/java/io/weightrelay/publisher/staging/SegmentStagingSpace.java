package io.weightrelay.publisher.staging;

import io.weightrelay.dataplane.InPlaceObject;
import io.weightrelay.dataplane.SegmentFullException;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.publisher.segment.SegmentOwner;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * Staging inside the node's store segment: a reservation is a reserved block of the segment, ranks
 * write the trainer's bytes straight into the memory the objects will live in, and storing turns
 * the block into objects without copying a byte (conversions that narrow the dtype leave the freed
 * rest of the block to the segment). The ranks map the segment's file.
 */
final class SegmentStagingSpace implements StagingSpace {

    private final SegmentOwner owner;

    SegmentStagingSpace(SegmentOwner owner) {
        this.owner = owner;
    }

    @Override
    public Path path() {
        return owner.shmPath();
    }

    @Override
    public long fileSize() {
        return owner.size();
    }

    @Override
    public long allocate(long size, StoreClient.End end) {
        try {
            return owner.reserve(size, end);
        } catch (SegmentFullException e) {
            return -1;
        }
    }

    @Override
    public void release(long offset, long size) {
        owner.releaseReservation(offset);
    }

    @Override
    public long freeBytes() {
        return owner.freeBytes();
    }

    @Override
    public ByteBuffer bytes(long offset, int length) {
        return owner.bytes(offset, length);
    }

    @Override
    public boolean store(long offset, long size, List<StagingArea.Piece> pieces, Executor puts) {
        owner.publishInPlace(offset, objects(pieces));
        return true;
    }

    /**
     * A narrowing conversion writes into a block of its own rather than in place: converted in
     * place, the objects would keep every other half of the staging block and the freed halves
     * between them would be too small for the next reservation, so fp32 staging would fragment the
     * segment. The staging block is freed whole instead, and the conversion costs the same pass.
     */
    @Override
    public boolean convertsIntoOutputBlocks() {
        return true;
    }

    @Override
    public long allocateOutput(long size, StoreClient.End end) {
        return owner.reserve(size, end);
    }

    @Override
    public void storeOutput(long block, List<StagingArea.Piece> pieces) {
        owner.publishInPlace(block, objects(pieces));
    }

    @Override
    public void releaseOutput(long block) {
        owner.releaseReservation(block);
    }

    private static List<InPlaceObject> objects(List<StagingArea.Piece> pieces) {
        List<InPlaceObject> objects = new ArrayList<>(pieces.size());
        for (StagingArea.Piece p : pieces) {
            objects.add(new InPlaceObject(p.key(), p.offset(), p.size()));
        }
        return objects;
    }

    @Override
    public void close() {
        // the segment belongs to its owner
    }
}
