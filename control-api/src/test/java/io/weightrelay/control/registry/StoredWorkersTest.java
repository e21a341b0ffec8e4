package io.weightrelay.control.registry;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.Nic;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.TransferEngineBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.control.redis.StoredRoundTrip;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A loader registration's stored workers and NICs, spelled out: the JSON in Redis is ours, so a
 * change of the contract's {@code WorkerPlacement} or {@code Nic} must not move a character of it.
 */
class StoredWorkersTest {

    private static final String KEY = "wr:loader:inst-a";

    /** Format 1 of the workers, as this release writes them. */
    static final String WORKERS =
            "{\"format\":1,\"workers\":["
                    + "{\"workerId\":\"w0\",\"rank\":0,\"node\":\"node-a\",\"nic\":\"mlx5_0\","
                    + "\"mode\":\"direct\",\"buffers\":["
                    + "{\"bufferId\":\"weights\",\"segment\":\"seg-a\",\"size\":1048576},"
                    + "{\"bufferId\":\"te\",\"segment\":\"seg-b\",\"size\":4096,\"transferEngine\":"
                    + "{\"segment\":\"10.0.0.7:15000\",\"address\":139637976727552}}],"
                    + "\"placement\":\"sha256:ab12\",\"fragmentCount\":3},"
                    + "{\"workerId\":\"w1\",\"rank\":1,\"node\":\"node-a\",\"nic\":\"mlx5_1\","
                    + "\"mode\":\"compat\",\"buffers\":["
                    + "{\"bufferId\":\"weights\",\"segment\":\"seg-a\",\"size\":1048576}],"
                    + "\"fragmentCount\":0}]}";

    /** What releases before formats wrote: a bare array of generated {@code WorkerPlacement}s. */
    static final String WORKERS_BEFORE_FORMATS =
            "[{\"workerId\":\"w0\",\"node\":\"node-a\",\"nic\":\"mlx5_0\",\"mode\":\"direct\","
                    + "\"buffers\":[{\"bufferId\":\"weights\",\"segment\":\"seg-a\",\"size\":1048576},"
                    + "{\"bufferId\":\"te\",\"segment\":\"seg-b\",\"size\":4096,\"transferEngine\":"
                    + "{\"segment\":\"10.0.0.7:15000\",\"address\":139637976727552}}],"
                    + "\"fragmentCount\":3,\"fragments\":[],\"placement\":\"sha256:ab12\",\"rank\":0},"
                    + "{\"workerId\":\"w1\",\"node\":\"node-a\",\"nic\":\"mlx5_1\",\"mode\":\"compat\","
                    + "\"buffers\":[{\"bufferId\":\"weights\",\"segment\":\"seg-a\",\"size\":1048576}],"
                    + "\"fragmentCount\":0,\"fragments\":[],\"rank\":1}]";

    static final String NICS =
            "{\"format\":1,\"nics\":[{\"name\":\"mlx5_0\",\"gbps\":400.0},"
                    + "{\"name\":\"mlx5_1\",\"gbps\":200.0}]}";

    static final String NICS_BEFORE_FORMATS =
            "[{\"name\":\"mlx5_0\",\"gbps\":400.0},{\"name\":\"mlx5_1\",\"gbps\":200.0}]";

    private final StoredRoundTrip<StoredWorkers, List<WorkerPlacement>> workers =
            new StoredRoundTrip<>(
                    StoredWorkers.class, KEY, StoredWorkers::read, StoredWorkers::toApi);

    private final StoredRoundTrip<StoredNics, List<Nic>> nics =
            new StoredRoundTrip<>(StoredNics.class, KEY, StoredNics::read, StoredNics::toApi);

    private static final List<Nic> NIC_LIST =
            List.of(new Nic("mlx5_0", 400.0), new Nic("mlx5_1", 200.0));

    private static ReceiveBuffer weights() {
        return new ReceiveBuffer("weights", "seg-a", 1048576L);
    }

    private static ReceiveBuffer engineMemory() {
        return new ReceiveBuffer("te", "seg-b", 4096L)
                .transferEngine(new TransferEngineBuffer("10.0.0.7:15000", 139637976727552L));
    }

    /** The direct worker's header and buffers, as registered and as answered. */
    private static WorkerPlacement direct() {
        return new WorkerPlacement(
                        "w0",
                        "node-a",
                        "mlx5_0",
                        ConsumeMode.DIRECT,
                        List.of(weights(), engineMemory()))
                .rank(0);
    }

    /** The compat worker's header and buffers, as registered and as answered. */
    private static WorkerPlacement compat() {
        return new WorkerPlacement("w1", "node-a", "mlx5_1", ConsumeMode.COMPAT, List.of(weights()))
                .rank(1);
    }

    /** The workers as registered: the direct one with its fragments inline. */
    private static List<WorkerPlacement> registered() {
        WorkerPlacement direct = direct();
        for (int i = 0; i < 3; i++) {
            direct.addFragmentsItem(
                    new TargetFragment(
                            "t" + i, List.of(0L), List.of(8L), "weights", 16L * i, List.of(2L)));
        }
        return List.of(direct, compat());
    }

    /** The workers as answered: fragments by digest and count only. */
    private static List<WorkerPlacement> answered() {
        return List.of(
                direct().placement("sha256:ab12").fragmentCount(3), compat().fragmentCount(0));
    }

    private static StoredWorkers stored() {
        List<WorkerPlacement> r = registered();
        return new StoredWorkers(
                StoredWorkers.FORMAT,
                List.of(
                        StoredWorkers.summary(r.get(0), "sha256:ab12", 3),
                        StoredWorkers.summary(r.get(1), null, 0)));
    }

    @Test
    void writesTheGoldenJsonWithoutFragments() {
        workers.writes(stored(), WORKERS);
        nics.writes(StoredNics.of(NIC_LIST), NICS);
        nics.writes(StoredNics.of(null), "{\"format\":1,\"nics\":[]}");
    }

    @Test
    void readsWhatItWrites() {
        workers.readsBack(WORKERS, stored(), answered());
        nics.readsBack(NICS, StoredNics.of(NIC_LIST), NIC_LIST);
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        workers.readsBeforeFormats(WORKERS_BEFORE_FORMATS, answered());
        nics.readsBeforeFormats(NICS_BEFORE_FORMATS, NIC_LIST);
        nics.readsBeforeFormats("[]", List.of());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        workers.refuses("{\"format\":2,\"workers\":\"elsewhere\"}", 2);
        nics.refuses("{\"format\":3,\"nics\":[]}", 3);
    }
}
