package io.weightrelay.dataplane.internal;

/**
 * What the metadata store keeps about a segment, the shape Mooncake keeps for its segments: who
 * owns it (node label, tcp endpoint of the owner's engine), its size, its shared-memory file and
 * whether the store may allocate objects in it.
 *
 * @param store true for store capacity (a mounted segment), false for a receive segment that is a
 *     transfer target only; a descriptor written before the flag existed is store capacity
 */
public record SegmentDescriptor(
        String name,
        String nodeLabel,
        String host,
        int port,
        long size,
        String shmPath,
        boolean store) {}
