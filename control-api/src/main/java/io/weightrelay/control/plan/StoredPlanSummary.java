package io.weightrelay.control.plan;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.redis.StoredJson;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;

/**
 * A computed plan's summary as cached in Redis beside its encodings. Field names are the contract's
 * {@code PlanSummary}'s, less {@code cached}, which says how a request found the plan and is set on
 * the answer; format 0, written before formats existed, is that class's JSON (its {@code cached:
 * false} is not read).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record StoredPlanSummary(
        @JsonSetter(nulls = Nulls.AS_EMPTY) int format,
        String planId,
        String sourceDigest,
        String targetDigest,
        String topologyDigest,
        List<String> instances,
        long storeReadBytes,
        long deliveryBytes,
        int batches,
        Long encodedBytes,
        Long computeMs,
        boolean valid)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    public StoredPlanSummary {
        instances = List.copyOf(instances);
    }

    static StoredPlanSummary of(PlanSummary api) {
        return new StoredPlanSummary(
                FORMAT,
                api.getPlanId(),
                api.getSourceDigest(),
                api.getTargetDigest(),
                api.getTopologyDigest(),
                api.getInstances(),
                api.getStoreReadBytes(),
                api.getDeliveryBytes(),
                api.getBatches(),
                api.getEncodedBytes(),
                api.getComputeMs(),
                api.getValid());
    }

    /** A new answer, {@code cached} unset. */
    public PlanSummary toApi() {
        PlanSummary out =
                new PlanSummary(
                        planId,
                        sourceDigest,
                        targetDigest,
                        topologyDigest,
                        new ArrayList<>(instances),
                        storeReadBytes,
                        deliveryBytes,
                        batches,
                        valid);
        out.setEncodedBytes(encodedBytes);
        out.setComputeMs(computeMs);
        return out;
    }

    /** The summary cached under {@code key}. */
    public static StoredPlanSummary read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredPlanSummary.class, FORMAT);
    }
}
