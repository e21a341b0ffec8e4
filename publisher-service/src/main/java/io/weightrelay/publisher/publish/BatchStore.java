package io.weightrelay.publisher.publish;

import io.weightrelay.api.StoredObject;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;

/**
 * The store stage of a batch: the output block converted fragments are written into, one stored
 * copy of every fragment (published where it was written when staging is in the segment, put into
 * the own segment from file staging), and the segment each object landed in, as control-api
 * registers it. When storing throws, nothing of the batch stays stored. Thread safe.
 */
final class BatchStore implements AutoCloseable {

    /** No output block: the batch converts in place, or converts nothing. */
    static final long NO_BLOCK = -1;

    /**
     * What a batch stored: the keys of its non-empty objects, and whether every one of them is in
     * the own segment (this engine wrote no tcp byte while they were stored).
     */
    record Stored(List<String> keys, boolean allLocal) {}

    private final StagingArea staging;
    private final SegmentOwner owner;

    /** File staging's puts, one an object, in parallel (segment staging publishes in place). */
    private final ExecutorService puts;

    BatchStore(StagingArea staging, SegmentOwner owner, int threads) {
        this.puts = Publisher.pool("publish-store-", threads);
        this.staging = staging;
        this.owner = owner;
    }

    /**
     * Reserves an output block for the batch's converted bytes when staging converts into output
     * blocks and the batch converts something; no room is a failed store.
     *
     * @return the block, or {@link #NO_BLOCK}
     */
    long reserveOutput(BatchLayout batch, long generation) {
        long bytes = batch.outputBlockBytes();
        if (!staging.convertsIntoOutputBlocks() || bytes == 0) {
            return NO_BLOCK;
        }
        try {
            return staging.reserveOutput(bytes, StagingArea.end(generation));
        } catch (RuntimeException e) {
            throw PublishProblems.STORE_FAILED.exception(
                    "no room for the batch's "
                            + bytes
                            + " converted bytes in segment "
                            + owner.segmentName()
                            + ": "
                            + Publisher.describe(e),
                    e);
        }
    }

    /** Gives back an output block that was not handed to {@link #store}. */
    void releaseOutput(long block) {
        if (block != NO_BLOCK) {
            staging.releaseOutput(block);
        }
    }

    /**
     * Stores the converted fragments written in staging and those written in the output block (if
     * any); the output block is used up whatever happens, and when this throws none of the
     * fragments stays stored.
     */
    Stored store(
            StagingArea.Reservation reservation,
            List<BatchConverter.Converted> converted,
            long outputBlock) {
        List<StagingArea.Piece> inStaging = new ArrayList<>();
        List<StagingArea.Piece> inOutput = new ArrayList<>();
        for (BatchConverter.Converted c : converted) {
            List<StagingArea.Piece> pieces = c.work().inPlace() ? inStaging : inOutput;
            if (c.result().outputBytes() > 0) {
                pieces.add(
                        new StagingArea.Piece(
                                c.work().key(), c.work().outputOffset(), c.result().outputBytes()));
            }
            BatchLayout.Scales scales = c.work().scales();
            if (scales != null && scales.bytes() > 0) {
                pieces.add(new StagingArea.Piece(scales.key(), scales.offset(), scales.bytes()));
            }
        }
        Counters before = owner.counters();
        try {
            // Readers must find the segment of what is registered next: when Redis lost the
            // descriptor, it is published now, not at the next heartbeat after the generation
            // was announced (a reader would meet an unknown segment meanwhile).
            owner.reannounce();
            staging.store(reservation, inStaging, puts);
        } catch (RuntimeException e) {
            releaseOutput(outputBlock);
            throw storeFailed(e);
        }
        if (outputBlock != NO_BLOCK) {
            try {
                staging.storeOutput(outputBlock, inOutput);
            } catch (RuntimeException e) {
                remove(inStaging.stream().map(StagingArea.Piece::key).toList());
                throw storeFailed(e);
            }
        }
        List<String> keys = new ArrayList<>(inStaging.size() + inOutput.size());
        inStaging.forEach(p -> keys.add(p.key()));
        inOutput.forEach(p -> keys.add(p.key()));
        return new Stored(keys, owner.counters().tcpWritten() == before.tcpWritten());
    }

    /** Removes stored objects of this node (a failed batch or generation). */
    void remove(List<String> keys) {
        keys.forEach(owner::remove);
    }

    private static RuntimeException storeFailed(RuntimeException e) {
        if (e instanceof RelayException) {
            return e;
        }
        return PublishProblems.STORE_FAILED.exception(
                "storing batch failed: " + Publisher.describe(e) + "; nothing of it stays stored",
                e);
    }

    /**
     * The registrations of the batch's objects with the segment each landed in. Puts prefer the own
     * segment and go to another node (over tcp) only when it is full, so when the batch was stored
     * without a tcp byte, every object is in the own segment and the directory need not be asked
     * once per object.
     */
    List<StoredObject> placed(List<BatchConverter.Converted> converted, Stored stored) {
        List<StoredObject> objects = new ArrayList<>(converted.size());
        for (BatchConverter.Converted c : converted) {
            objects.add(
                    object(
                            c.work().key(),
                            c.result().outputBytes(),
                            c.result().outputCrc(),
                            stored.allLocal()));
            BatchLayout.Scales scales = c.work().scales();
            if (scales != null) {
                objects.add(object(scales.key(), scales.bytes(), c.scaleCrc(), stored.allLocal()));
            }
        }
        return objects;
    }

    private StoredObject object(String key, long size, int crc, boolean allLocal) {
        String segment = owner.segmentName();
        if ((!allLocal || !owner.ownsSegment()) && size > 0) {
            segment = owner.segmentOf(key).orElse(segment);
        }
        return new StoredObject(key, size, Checksums.format(crc), segment);
    }

    @Override
    public void close() {
        puts.shutdownNow();
    }
}
