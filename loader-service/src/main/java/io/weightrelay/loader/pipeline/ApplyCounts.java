package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.Counters;

/**
 * What one loader moved in one apply, every count verified against the transfer results.
 *
 * @param bytesRead bytes its readers read from the store
 * @param bytesPushed bytes it wrote from staging to consumers (its own workers included)
 * @param bytesFannedOut bytes it copied as a node delegate to the other compat workers of its node
 * @param bytesReceived bytes its workers received (pushes and fan-outs into them, by the plan)
 * @param batches batches it ran
 * @param transport what this loader's engine moved meanwhile, per transport (null if not measured)
 */
public record ApplyCounts(
        long bytesRead,
        long bytesPushed,
        long bytesFannedOut,
        long bytesReceived,
        int batches,
        Counters transport) {

    ApplyCounts withTransport(Counters value) {
        return new ApplyCounts(
                bytesRead, bytesPushed, bytesFannedOut, bytesReceived, batches, value);
    }
}
