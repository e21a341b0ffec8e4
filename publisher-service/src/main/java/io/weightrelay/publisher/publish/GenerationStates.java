package io.weightrelay.publisher.publish;

import io.weightrelay.reshard.manifest.GenerationId;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The generations this node publishes, each loaded from control-api on first use and kept, oldest
 * first, up to a bound: settled ones go first; beyond twice the bound, open ones without a batch in
 * flight go too (their trainer never finished them; its abort needs no state here). Thread safe.
 */
final class GenerationStates {

    private final ControlPlane control;
    private final int keep;
    private final Map<String, GenerationState> generations = new LinkedHashMap<>();

    GenerationStates(ControlPlane control, int keep) {
        this.control = control;
        this.keep = keep;
    }

    /** The state of a generation, loading its layout from control-api if it has none yet. */
    GenerationState load(GenerationId generation) {
        String id = generation.path();
        synchronized (generations) {
            GenerationState gen = generations.get(id);
            if (gen != null) {
                return gen;
            }
        }
        // Outside the lock: fetching a layout is a control-api call.
        GenerationState fresh = new GenerationState(control.layout(generation));
        synchronized (generations) {
            GenerationState gen = generations.putIfAbsent(id, fresh);
            evict();
            return gen == null ? fresh : gen;
        }
    }

    /** The state of a generation, if this node has one. */
    Optional<GenerationState> find(GenerationId generation) {
        synchronized (generations) {
            return Optional.ofNullable(generations.get(generation.path()));
        }
    }

    private void evict() {
        int excess = generations.size() - keep;
        for (Iterator<GenerationState> it = generations.values().iterator();
                excess > 0 && it.hasNext(); ) {
            if (it.next().isSettled()) {
                it.remove();
                excess--;
            }
        }
        excess = generations.size() - 2 * keep;
        for (Iterator<GenerationState> it = generations.values().iterator();
                excess > 0 && it.hasNext(); ) {
            if (it.next().isIdle()) {
                it.remove();
                excess--;
            }
        }
    }
}
