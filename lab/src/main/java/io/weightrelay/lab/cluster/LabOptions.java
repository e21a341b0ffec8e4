package io.weightrelay.lab.cluster;

import java.time.Duration;
import java.util.List;

/**
 * How a single-machine lab runs its services, beyond its {@link LabCluster.Spec}: the ways the
 * {@code LabCluster.start...} factories differ.
 *
 * @param checksums whether control-api and every loader prove an update end to end by checksums
 *     (off only to measure what that costs)
 * @param controlApis how many control-api instances share the lab's Redis and key prefix
 * @param storageUnits whether each trainer node runs a storage unit beside a client-only publisher
 * @param segmentBytes every publisher's segment size, or 0: sized by {@link
 *     LabCatalog#publisherSizes}
 * @param controlApiSkews each control-api instance's {@code relay.clock.skew}, by index (empty:
 *     none skewed); a lab with skews spreads its clients over the instances
 */
record LabOptions(
        boolean checksums,
        int controlApis,
        boolean storageUnits,
        long segmentBytes,
        List<Duration> controlApiSkews) {}
