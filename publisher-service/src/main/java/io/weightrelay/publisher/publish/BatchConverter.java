package io.weightrelay.publisher.publish;

import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.publisher.Futures;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.convert.Converter;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.reshard.convert.BlockFp8;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * The convert stage of a batch: converts every fragment to the rollout dtype where its {@link
 * BatchLayout.Work} says (in place in staging, or into the output block) and checksums it in the
 * same pass, in parallel over fragments on CPU workers, each reading its bytes once; then checks
 * each staged part against the checksum its rank computed. Thread safe.
 */
final class BatchConverter implements AutoCloseable {

    /** A converted fragment: its CRCs and output size, and the CRC of its scales (0 without). */
    record Converted(BatchLayout.Work work, Converter.Result result, int scaleCrc) {}

    private final StagingArea staging;
    private final ExecutorService workers;

    BatchConverter(StagingArea staging, int threads) {
        this.staging = staging;
        this.workers = Publisher.pool("publish-convert-", threads);
    }

    /**
     * Converts and checksums every fragment and checks each part against its rank's checksum as
     * soon as the part's fragments are done.
     *
     * @param tensors the batch's staged tensors, which {@link BatchLayout.Work#tensorIndex} indexes
     * @return the converted fragments in batch order
     */
    List<Converted> convertAndVerify(BatchLayout batch, List<StagedTensor> tensors) {
        Map<Integer, List<BatchLayout.Work>> byPart = new LinkedHashMap<>();
        for (BatchLayout.Work w : batch.works()) {
            byPart.computeIfAbsent(w.tensorIndex(), k -> new ArrayList<>()).add(w);
        }
        List<CompletableFuture<List<Converted>>> parts = new ArrayList<>(byPart.size());
        for (List<BatchLayout.Work> part : byPart.values()) {
            List<CompletableFuture<Converted>> conversions = new ArrayList<>(part.size());
            for (BatchLayout.Work w : part) {
                conversions.add(CompletableFuture.supplyAsync(() -> convert(w), workers));
            }
            parts.add(
                    CompletableFuture.allOf(conversions.toArray(CompletableFuture[]::new))
                            .thenApply(
                                    done -> {
                                        List<Converted> list =
                                                conversions.stream()
                                                        .map(CompletableFuture::join)
                                                        .toList();
                                        verifyChecksum(
                                                list, tensors.get(part.get(0).tensorIndex()));
                                        return list;
                                    }));
        }
        Futures.joinAll(parts);
        List<Converted> out = new ArrayList<>(batch.works().size());
        for (CompletableFuture<List<Converted>> part : parts) {
            out.addAll(part.join());
        }
        return out;
    }

    private Converted convert(BatchLayout.Work w) {
        ByteBuffer source = staging.bytes(w.stagingOffset(), w.sourceBytes());
        ByteBuffer target = w.inPlace() ? source : staging.bytes(w.outputOffset(), w.outputBytes());
        BatchLayout.Scales scales = w.scales();
        if (scales == null) {
            return new Converted(w, Converter.convert(source, target, w.conversion()), 0);
        }
        if (w.inPlace() && w.outputBytes() + scales.bytes() > w.sourceBytes()) {
            throw PublishProblems.UNSUPPORTED_CONVERSION.exception(
                    "fragment "
                            + w.key()
                            + " ("
                            + w.sourceBytes()
                            + " staged bytes) has no room for its "
                            + w.outputBytes()
                            + " E4M3 bytes and "
                            + scales.bytes()
                            + " scale bytes in file staging; use segment staging for"
                            + " tensors this small");
        }
        BlockFp8.Result r =
                BlockFp8.convert(
                        source,
                        target,
                        staging.bytes(scales.offset(), scales.bytes()),
                        w.conversion().sourceType(),
                        scales.rows(),
                        scales.cols());
        return new Converted(
                w,
                new Converter.Result(r.sourceCrc(), r.outputCrc(), r.outputBytes()),
                r.scaleCrc());
    }

    /** The rank's checksum covers the part's staged bytes: the fragments' input CRCs combined. */
    private static void verifyChecksum(List<Converted> part, StagedTensor tensor) {
        String expected = tensor.getChecksum(); // present: BatchLayout refused a part without
        if (tensor.getBytes() == 0) {
            return;
        }
        int crc = part.get(0).result().sourceCrc();
        for (int i = 1; i < part.size(); i++) {
            Converted c = part.get(i);
            crc = Checksums.combine(crc, c.result().sourceCrc(), c.work().sourceBytes());
        }
        if (Checksums.parse(expected) != crc) {
            throw PublishProblems.CHECKSUM_MISMATCH
                    .exception(
                            "tensor '"
                                    + tensor.getName()
                                    + "': staged bytes have "
                                    + Checksums.format(crc)
                                    + ", the rank computed "
                                    + expected)
                    .with("tensor", tensor.getName());
        }
    }

    @Override
    public void close() {
        workers.shutdownNow();
    }
}
