package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.control.redis.StoredRoundTrip;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A checkpoint's stored owner results, spelled out: the JSON in Redis is ours. */
class StoredOwnersTest {

    private static final String KEY = "wr:checkpoint:llama:4";

    static final String GOLDEN =
            "{\"format\":1,\"owners\":["
                    + "{\"segment\":\"seg-a\",\"objects\":12,\"bytes\":4096,\"seconds\":0.25,"
                    + "\"file\":\"seg-a.bin\"},"
                    + "{\"segment\":\"seg-b\",\"objects\":0,\"bytes\":0,\"seconds\":1.5,"
                    + "\"error\":\"owner unreachable\"}]}";

    /** What releases before formats wrote: a bare array of generated {@code OwnerCheckpoint}s. */
    static final String BEFORE_FORMATS =
            "[{\"segment\":\"seg-a\",\"objects\":12,\"bytes\":4096,\"seconds\":0.25,"
                    + "\"file\":\"seg-a.bin\"},"
                    + "{\"segment\":\"seg-b\",\"objects\":0,\"bytes\":0,\"seconds\":1.5,"
                    + "\"error\":\"owner unreachable\"}]";

    private final StoredRoundTrip<StoredOwners, List<OwnerCheckpoint>> trip =
            new StoredRoundTrip<>(StoredOwners.class, KEY, StoredOwners::read, StoredOwners::toApi);

    private static List<OwnerCheckpoint> owners() {
        return List.of(
                new OwnerCheckpoint("seg-a", 12L, 4096L, 0.25).file("seg-a.bin"),
                new OwnerCheckpoint("seg-b", 0L, 0L, 1.5).error("owner unreachable"));
    }

    @Test
    void writesTheGoldenJson() {
        trip.writes(StoredOwners.of(owners()), GOLDEN);
    }

    @Test
    void readsWhatItWrites() {
        trip.readsBack(GOLDEN, StoredOwners.of(owners()), owners());
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        trip.readsBeforeFormats(BEFORE_FORMATS, owners());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        trip.refuses("{\"format\":2,\"owners\":{}}", 2);
    }
}
