package io.weightrelay.dataplane;

import java.nio.file.Path;

/**
 * A segment file removed by {@link Dataplane#reclaimOrphanedSegmentFiles} because its owner process
 * was gone.
 *
 * @param path the file that was removed
 * @param bytes its size (the memory given back to the shared-memory filesystem)
 */
public record ReclaimedSegmentFile(Path path, long bytes) {}
