package io.weightrelay.control.plan;

import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.redis.StoredRoundTrip;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A cached plan summary, spelled out: the JSON in Redis is ours, not the contract's. */
class StoredPlanSummaryTest {

    private static final String KEY = "wr:plan-summary:sha256:p";

    static final String GOLDEN =
            "{\"format\":1,\"planId\":\"sha256:p\",\"sourceDigest\":\"sha256:s\","
                    + "\"targetDigest\":\"sha256:g\",\"topologyDigest\":\"sha256:t\","
                    + "\"instances\":[\"i0\",\"i1\"],\"storeReadBytes\":1000,\"deliveryBytes\":2000,"
                    + "\"batches\":4,\"encodedBytes\":512,\"computeMs\":7,\"valid\":true}";

    /** What releases before formats wrote: the generated {@code PlanSummary}'s JSON. */
    static final String BEFORE_FORMATS =
            "{\"planId\":\"sha256:p\",\"sourceDigest\":\"sha256:s\",\"targetDigest\":\"sha256:g\","
                    + "\"topologyDigest\":\"sha256:t\",\"instances\":[\"i0\",\"i1\"],"
                    + "\"storeReadBytes\":1000,\"deliveryBytes\":2000,\"batches\":4,\"valid\":true,"
                    + "\"cached\":false,\"computeMs\":7,\"encodedBytes\":512}";

    private final StoredRoundTrip<StoredPlanSummary, PlanSummary> trip =
            new StoredRoundTrip<>(
                    StoredPlanSummary.class,
                    KEY,
                    StoredPlanSummary::read,
                    StoredPlanSummary::toApi);

    private static PlanSummary computed() {
        return new PlanSummary(
                        "sha256:p",
                        "sha256:s",
                        "sha256:g",
                        "sha256:t",
                        List.of("i0", "i1"),
                        1000L,
                        2000L,
                        4,
                        true)
                .encodedBytes(512L)
                .computeMs(7L);
    }

    @Test
    void writesTheGoldenJsonWithoutHowARequestFoundIt() {
        trip.writes(StoredPlanSummary.of(computed().cached(false)), GOLDEN);
    }

    @Test
    void readsWhatItWrites() {
        trip.readsBack(GOLDEN, StoredPlanSummary.of(computed()), computed());
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        trip.readsBeforeFormats(BEFORE_FORMATS, computed());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        trip.refuses("{\"format\":2}", 2);
    }
}
