package io.weightrelay.control.plan;

import io.weightrelay.control.redis.StoredRoundTrip;
import io.weightrelay.reshard.plan.PlanLoads;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A plan's cached loads, spelled out: a change of reshard's record must not move the JSON. */
class StoredPlanLoadsTest {

    private static final String KEY = "wr:plan-load:sha256:p";

    static final String GOLDEN =
            "{\"format\":1,\"nics\":[{\"node\":\"t0\",\"nic\":0,\"trainer\":true,\"gbps\":400.0,"
                    + "\"readBytes\":0,\"pushedBytes\":0,\"receivedBytes\":0},"
                    + "{\"node\":\"r0\",\"nic\":1,\"trainer\":false,\"gbps\":200.0,"
                    + "\"readBytes\":100,\"pushedBytes\":50,\"receivedBytes\":25}],"
                    + "\"instances\":[{\"instance\":\"i0\",\"readBytes\":100,\"pushedBytes\":50,"
                    + "\"receivedBytes\":25}]}";

    /** What releases before formats wrote: reshard's {@code PlanLoads} as JSON. */
    static final String BEFORE_FORMATS =
            "{\"nics\":[{\"node\":\"t0\",\"nic\":0,\"trainer\":true,\"gbps\":400.0,"
                    + "\"readBytes\":0,\"pushedBytes\":0,\"receivedBytes\":0},"
                    + "{\"node\":\"r0\",\"nic\":1,\"trainer\":false,\"gbps\":200.0,"
                    + "\"readBytes\":100,\"pushedBytes\":50,\"receivedBytes\":25}],"
                    + "\"instances\":[{\"instance\":\"i0\",\"readBytes\":100,\"pushedBytes\":50,"
                    + "\"receivedBytes\":25}]}";

    private final StoredRoundTrip<StoredPlanLoads, PlanLoads> trip =
            new StoredRoundTrip<>(
                    StoredPlanLoads.class, KEY, StoredPlanLoads::read, StoredPlanLoads::loads);

    private static PlanLoads loads() {
        return new PlanLoads(
                List.of(
                        new PlanLoads.Nic("t0", 0, true, 400.0, 0, 0, 0),
                        new PlanLoads.Nic("r0", 1, false, 200.0, 100, 50, 25)),
                List.of(new PlanLoads.Instance("i0", 100, 50, 25)));
    }

    @Test
    void writesTheGoldenJson() {
        trip.writes(StoredPlanLoads.of(loads()), GOLDEN);
    }

    @Test
    void readsWhatItWrites() {
        trip.readsBack(GOLDEN, StoredPlanLoads.of(loads()), loads());
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        trip.readsBeforeFormats(BEFORE_FORMATS, loads());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        trip.refuses("{\"format\":2,\"nics\":{}}", 2);
    }
}
