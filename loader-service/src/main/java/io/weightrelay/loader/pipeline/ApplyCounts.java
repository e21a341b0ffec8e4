package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.reshard.checksum.RangeChecksums;
import java.util.Map;

/**
 * What one loader moved in one apply, every count verified against the transfer results.
 *
 * @param bytesRead bytes its readers read from the store
 * @param bytesPushed bytes it wrote from staging to consumers (its own workers included)
 * @param bytesFannedOut bytes it copied as a node delegate to the other compat workers of its node
 * @param bytesReceived bytes its workers received (pushes and fan-outs into them, by the plan)
 * @param batches batches it ran
 * @param transport what this loader's engine moved meanwhile, per transport (null if not measured)
 * @param checksums the CRC32C of every range its readers read (null when checksums are off), for
 *     control-api to prove against the published checksums
 * @param checksumNanos time the data plane's threads spent taking those CRC32Cs, summed over
 *     threads (fused with the copy or receive of each range, so apart from moving the bytes)
 * @param sent the digests of what its writes put into each instance's buffers (by destination
 *     instance, as the data plane summed the bytes it moved), which every receiver proves its
 *     buffers against before it reports APPLIED (null when checksums are off)
 * @param sentSummedBytes bytes of its writes the data plane summed as it moved them, for {@code
 *     sent}
 * @param sentTwinnedBytes bytes of its writes that went unsummed because another write carried the
 *     same source bytes summed (counted in {@code sent} with that one's checksum); with checksums
 *     on, the two add up to what it pushed and fanned out
 */
public record ApplyCounts(
        long bytesRead,
        long bytesPushed,
        long bytesFannedOut,
        long bytesReceived,
        int batches,
        Counters transport,
        RangeChecksums checksums,
        long checksumNanos,
        Map<String, Map<LandedProof.Key, LandedProof.Digest>> sent,
        long sentSummedBytes,
        long sentTwinnedBytes) {

    public ApplyCounts(
            long bytesRead,
            long bytesPushed,
            long bytesFannedOut,
            long bytesReceived,
            int batches,
            Counters transport,
            RangeChecksums checksums,
            long checksumNanos) {
        this(
                bytesRead,
                bytesPushed,
                bytesFannedOut,
                bytesReceived,
                batches,
                transport,
                checksums,
                checksumNanos,
                null,
                0,
                0);
    }

    public ApplyCounts(
            long bytesRead,
            long bytesPushed,
            long bytesFannedOut,
            long bytesReceived,
            int batches,
            Counters transport) {
        this(bytesRead, bytesPushed, bytesFannedOut, bytesReceived, batches, transport, null, 0);
    }

    ApplyCounts withTransport(Counters value) {
        return new ApplyCounts(
                bytesRead,
                bytesPushed,
                bytesFannedOut,
                bytesReceived,
                batches,
                value,
                checksums,
                checksumNanos,
                sent,
                sentSummedBytes,
                sentTwinnedBytes);
    }
}
