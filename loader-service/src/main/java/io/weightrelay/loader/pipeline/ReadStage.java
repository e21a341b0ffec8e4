package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.DataplaneError;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.service.concurrent.DaemonThreads;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The read stage of an apply: fills staging slot {@code k % slots} with batch {@code k} from the
 * store (its objects looked up in one round trip, then {@code getIntoRanges}, one call per object,
 * several objects in flight), checking every count and, with checksums, taking the CRC32C of every
 * range as it lands.
 */
final class ReadStage {
    /** Put on the filled queue after the last batch. */
    static final int DONE = -1;

    private final ApplyContext ctx;
    private final SliceSchedule slice;
    private final Slice plan;
    private final StoreClient store;
    private final boolean checksums;
    private final ReadFault fault;

    /** Concurrent store reads of one batch: several objects in flight use several streams. */
    private final ExecutorService readers;

    private final ConcurrentLinkedQueue<RangeChecksums.Entry> readChecksums =
            new ConcurrentLinkedQueue<>();
    private final AtomicLong checksumNanos = new AtomicLong();
    private final AtomicLong bytesRead = new AtomicLong();
    private final AtomicLong readNanos = new AtomicLong();

    ReadStage(
            ApplyContext ctx,
            StoreClient store,
            int readThreads,
            boolean checksums,
            ReadFault fault) {
        this.ctx = ctx;
        this.slice = ctx.slice;
        this.plan = ctx.plan;
        this.store = store;
        this.checksums = checksums;
        this.fault = fault;
        this.readers =
                Executors.newFixedThreadPool(
                        readThreads, DaemonThreads.named("apply-read-" + slice.instance()));
    }

    /** Fills slot after slot, handing each filled batch to the push stage; then {@link #DONE}. */
    void run(Semaphore free, BlockingQueue<Integer> filled) {
        try {
            for (int k = 0; k < slice.batchCount() && !ctx.failed(); k++) {
                if (slice.reads(k).isEmpty()) {
                    continue;
                }
                while (!free.tryAcquire(
                        ApplyContext.WAIT_SLICE.toMillis(), TimeUnit.MILLISECONDS)) {
                    if (ctx.failed()) {
                        return;
                    }
                    ctx.remainingMillis();
                }
                long t0 = System.nanoTime();
                readBatch(k);
                readNanos.addAndGet(System.nanoTime() - t0);
                filled.put(k);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApplyFailure(slice.instance(), "read stage interrupted");
        } finally {
            filled.offer(DONE);
        }
    }

    private void readBatch(int batch) {
        List<Integer> reads = slice.reads(batch);
        List<ObjectRead> objects = new ArrayList<>();
        int i = 0;
        GenerationId id = new GenerationId(ctx.model, ctx.generation);
        while (i < reads.size()) {
            int object = plan.readObject(reads.get(i));
            List<ReadRange> ranges = new ArrayList<>();
            int j = i;
            for (; j < reads.size() && plan.readObject(reads.get(j)) == object; j++) {
                int read = reads.get(j);
                long base = ctx.stagingOffset(batch, read) - plan.readStart(read);
                for (int r = plan.rangeFirst(read); r < plan.rangeEnd(read); r++) {
                    ranges.add(
                            new ReadRange(
                                    plan.rangeStart(r),
                                    plan.rangeLength(r),
                                    ctx.staging,
                                    base + plan.rangeStart(r)));
                }
            }
            String objectId = plan.objectId(object);
            objects.add(new ObjectRead(objectId, id.objectKey(objectId), ranges));
            i = j;
        }
        // The batch's objects are looked up in one metadata round trip, not one per object:
        // with one per object the lookups, not the bytes, were most of a small batch's read.
        List<String> keys = objects.stream().map(ObjectRead::key).toList();
        List<StoreClient.Located> located;
        try {
            located = store.locate(keys);
        } catch (DataplaneException e) {
            throw new ApplyFailure(
                    keys.get(0),
                    "looking up the "
                            + keys.size()
                            + " objects of batch "
                            + batch
                            + " failed: "
                            + e.getMessage(),
                    e);
        }
        List<java.util.concurrent.Future<?>> pending = new ArrayList<>();
        for (int o = 0; o < objects.size(); o++) {
            ObjectRead read = objects.get(o);
            StoreClient.Located object = located.get(o);
            pending.add(readers.submit(() -> readObject(read.objectId(), object, read.ranges())));
        }
        for (java.util.concurrent.Future<?> f : pending) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ApplyFailure(slice.instance(), "read stage interrupted");
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof ApplyFailure a) {
                    throw a;
                }
                throw new ApplyFailure(slice.instance(), "read failed: " + e.getCause(), e);
            }
        }
    }

    /**
     * One object's ranges of this batch, in one {@code getIntoRanges}; every count checked. With
     * checksums the data plane takes the CRC32C of every range as it copies or receives it (block
     * by block while in cache, on the threads that move the bytes), so that control-api can prove
     * what was read against the published checksum without anyone reading a byte again.
     */
    private void readObject(String objectId, StoreClient.Located object, List<ReadRange> ranges) {
        if (ctx.failed()) {
            return;
        }
        String key = object.key();
        long[] got;
        int[] crcs = null;
        try {
            if (checksums) {
                StoreClient.ChecksummedReads r = store.getIntoRangesChecksummed(object, ranges);
                got = r.bytes();
                crcs = r.crc32c();
                checksumNanos.addAndGet(r.checksumNanos());
            } else {
                got = store.getIntoRanges(object, ranges);
            }
        } catch (DataplaneException e) {
            throw new ApplyFailure(key, "reading " + key + " failed: " + e.getMessage(), e);
        }
        fault.afterRead(key, ranges, got, crcs);
        long bytes = 0;
        for (int r = 0; r < got.length; r++) {
            String at = "read of " + key + " at " + ranges.get(r).objectOffset();
            if (got[r] < 0) {
                // a per-range error code, not a count: name it
                DataplaneError error = DataplaneError.fromCode(got[r]);
                if (error == DataplaneError.PEER_GONE || error == DataplaneError.TIMEOUT) {
                    throw ownerGone(key, at, error, object.segments());
                }
                throw new ApplyFailure(key, at + " failed: " + error);
            }
            if (got[r] != ranges.get(r).length()) {
                throw new ApplyFailure(
                        key,
                        at + " returned " + got[r] + " of " + ranges.get(r).length() + " bytes");
            }
            bytes += got[r];
        }
        if (crcs != null) {
            for (int r = 0; r < ranges.size(); r++) {
                ReadRange range = ranges.get(r);
                readChecksums.add(
                        new RangeChecksums.Entry(
                                objectId, range.objectOffset(), range.length(), crcs[r]));
            }
        }
        bytesRead.addAndGet(bytes);
        ctx.progress.accept(bytes);
    }

    /**
     * A read that failed because no owner of the object's segments answered: names those segments
     * (their owner is what failed, not the object), the first as the failing peer.
     */
    static ApplyFailure ownerGone(
            String key, String at, DataplaneError error, List<String> segments) {
        if (segments.isEmpty()) {
            return new ApplyFailure(
                    key,
                    at
                            + " failed: "
                            + error
                            + " (the owner of its segment is gone or did not answer within the"
                            + " transfer timeout)");
        }
        return new ApplyFailure(
                segments.get(0),
                at
                        + " failed: "
                        + error
                        + (segments.size() == 1
                                ? " (the owner of segment "
                                        + segments.get(0)
                                        + ", which holds it, is"
                                : " (the owners of segments "
                                        + String.join(", ", segments)
                                        + ", which hold it, are")
                        + " gone or did not answer within the transfer timeout)");
    }

    /** One object's ranges of a batch, and its store key. */
    private record ObjectRead(String objectId, String key, List<ReadRange> ranges) {}

    /**
     * Stops the reads not started yet and waits until those in flight ended (a store read ends
     * within the data plane's io timeout per chunk), so no read of this apply lands in staging that
     * the next update uses; one that does not end in time gives the staging up.
     */
    void close() {
        readers.shutdownNow();
        try {
            if (!readers.awaitTermination(
                    ApplyContext.CANCEL_DRAIN.toMillis(), TimeUnit.MILLISECONDS)) {
                ctx.markUndrained("a store read");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ctx.markUndrained("a store read (interrupted while waiting for it)");
        }
    }

    long bytesRead() {
        return bytesRead.get();
    }

    long readNanos() {
        return readNanos.get();
    }

    long checksumNanos() {
        return checksumNanos.get();
    }

    /** Every range read with its CRC32C, or null without checksums. */
    RangeChecksums checksums() {
        return checksums ? new RangeChecksums(List.copyOf(readChecksums)) : null;
    }
}
