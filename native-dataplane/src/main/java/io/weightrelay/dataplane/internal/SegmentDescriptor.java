package io.weightrelay.dataplane.internal;

/**
 * What the metadata store keeps about a segment, the shape Mooncake keeps for its segments: who
 * owns it (node label, tcp endpoint of the owner's engine), its size and its shared-memory file.
 */
public record SegmentDescriptor(
        String name, String nodeLabel, String host, int port, long size, String shmPath) {}
