package io.weightrelay.dataplane.internal;

/**
 * What the metadata store keeps about a segment, the shape Mooncake keeps for its segments: who
 * owns it (node label, host identity, tcp endpoint and instance id of the owner's engine), its
 * size, its shared-memory file and whether the store may allocate objects in it.
 *
 * @param hostId identity of the owner's host (see {@link HostIdentity}); {@code null} for a
 *     descriptor written before host identities existed, which no engine uses for transfers
 * @param engineId random id of the owning engine instance, {@code null} in old descriptors
 * @param incarnation random non-zero id of this registration of the segment (a segment created
 *     again under the same name has another); every tcp request names it and the owner refuses
 *     requests for another one. 0 in descriptors written before incarnations existed
 * @param store true for store capacity (a mounted segment), false for a receive segment that is a
 *     transfer target only; a descriptor written before the flag existed is store capacity
 */
public record SegmentDescriptor(
        String name,
        String nodeLabel,
        String hostId,
        String host,
        int port,
        long size,
        String shmPath,
        boolean store,
        String engineId,
        long incarnation) {

    /** Whether it was written by a data plane that records host identities and incarnations. */
    public boolean current() {
        return hostId != null && engineId != null && incarnation != 0;
    }
}
