package io.weightrelay.control.operator;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.reshard.manifest.GenerationId;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Component;

/**
 * What each segment holds: the registered objects of every generation whose bytes are still stored
 * (open, active, retired), by the segments their publishers named. A committed generation's objects
 * never change, so its sums are read once per process and kept until it leaves the list (collected,
 * lost or aborted); an open generation is read on every call.
 */
@Component
class SegmentFills {

    private final GenerationQueries generations;
    private final Map<String, Map<String, long[]>> committed = new ConcurrentHashMap<>();

    SegmentFills(GenerationQueries generations) {
        this.generations = generations;
    }

    /** Segment to {bytes, objects}. */
    Map<String, long[]> fill() {
        Map<String, long[]> out = new HashMap<>();
        Set<String> seen = new HashSet<>();
        for (String model : generations.models()) {
            for (Generation g : generations.list(model, null, null, Integer.MAX_VALUE)) {
                if (!holdsBytes(g.getState())) {
                    continue;
                }
                GenerationId id = new GenerationId(model, g.getGeneration());
                String key = model + "/" + g.getGeneration();
                Map<String, long[]> sums;
                if (g.getState() == GenerationState.OPEN) {
                    sums = generations.bytesPerSegment(id);
                } else {
                    seen.add(key);
                    sums = committed.computeIfAbsent(key, k -> generations.bytesPerSegment(id));
                }
                sums.forEach(
                        (segment, s) -> {
                            long[] total = out.computeIfAbsent(segment, x -> new long[2]);
                            total[0] += s[0];
                            total[1] += s[1];
                        });
            }
        }
        committed.keySet().retainAll(seen);
        return out;
    }

    private static boolean holdsBytes(GenerationState state) {
        return state == GenerationState.OPEN
                || state == GenerationState.ACTIVE
                || state == GenerationState.RETIRED;
    }
}
