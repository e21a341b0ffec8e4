package io.weightrelay.control.store;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What control-api needs from the object store. Implementations are thread safe and throw {@link
 * io.weightrelay.service.problem.RelayException} of kind {@link StoreProblems#STORE_UNAVAILABLE}
 * when the store cannot answer.
 */
public interface ObjectStore {

    /**
     * Removes the objects stored under these keys; keys with no object are skipped.
     *
     * @return how many objects existed and were removed
     */
    long remove(Collection<String> keys);

    /** The keys among these that have an object. */
    Set<String> existing(Collection<String> keys);

    /** The segments holding each existing key's replicas; absent keys are left out. */
    Map<String, List<String>> locations(Collection<String> keys);

    /** A byte range of a stored object. */
    record Span(long offset, long length) {}

    /**
     * Reads these ranges of the object stored under {@code key} as the store holds it now, and
     * answers the CRC32C of each, in the order given. control-api's own read of an object whose
     * readers' checksums dispute what was published, and of the bytes a plan leaves unread of an
     * object it reads only in part: it moves the bytes through a bounded buffer of its own (many
     * small ranges share one request), so any object size is fine.
     *
     * @return the CRC32C per range, or empty when no object is stored under {@code key}
     */
    Optional<int[]> rangeChecksums(String key, List<Span> ranges);
}
