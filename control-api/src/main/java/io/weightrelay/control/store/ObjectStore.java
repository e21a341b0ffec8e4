package io.weightrelay.control.store;

import java.util.Collection;
import java.util.List;
import java.util.Map;
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
}
