package io.weightrelay.control.plan;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.control.redis.StoredJson;
import io.weightrelay.reshard.plan.PlanLoads;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;

/**
 * A plan's bytes per NIC and per instance as cached beside it: reshard's {@code PlanLoads} (whose
 * field names it keeps) with its format. Format 0, written before formats existed, is that record's
 * JSON.
 */
public record StoredPlanLoads(
        @JsonSetter(nulls = Nulls.AS_EMPTY) int format,
        List<PlanLoads.Nic> nics,
        List<PlanLoads.Instance> instances)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    public StoredPlanLoads {
        nics = List.copyOf(nics);
        instances = List.copyOf(instances);
    }

    static StoredPlanLoads of(PlanLoads loads) {
        return new StoredPlanLoads(FORMAT, loads.nics(), loads.instances());
    }

    public PlanLoads loads() {
        return new PlanLoads(nics, instances);
    }

    /** The loads cached under {@code key}. */
    public static StoredPlanLoads read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredPlanLoads.class, FORMAT);
    }
}
