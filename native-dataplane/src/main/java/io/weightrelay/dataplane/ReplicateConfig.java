package io.weightrelay.dataplane;

import java.util.List;
import java.util.Objects;

/**
 * Where a put stores its replicas (Mooncake Store's {@code ReplicateConfig}).
 *
 * @param replicaNum number of copies, each in a distinct segment
 * @param preferredSegments segments to try first, in order; a preference, never a requirement: a
 *     full or unknown preferred segment yields a replica elsewhere
 * @param hardPin never evict (this store never evicts; the flag is kept in the directory)
 */
public record ReplicateConfig(int replicaNum, List<String> preferredSegments, boolean hardPin) {

    public ReplicateConfig {
        if (replicaNum < 1) {
            throw new IllegalArgumentException("replicaNum must be >= 1");
        }
        preferredSegments = List.copyOf(Objects.requireNonNull(preferredSegments));
    }

    /** One pinned copy, preferably in {@code segment}: how a publisher stores a tensor. */
    public static ReplicateConfig preferLocal(String segment) {
        return new ReplicateConfig(1, List.of(segment), true);
    }
}
