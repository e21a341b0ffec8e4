package io.weightrelay.control.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.service.problem.RelayException;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

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

    private final JsonMapper json = JsonMapper.builder().build();

    private static List<OwnerCheckpoint> owners() {
        return List.of(
                new OwnerCheckpoint("seg-a", 12L, 4096L, 0.25).file("seg-a.bin"),
                new OwnerCheckpoint("seg-b", 0L, 0L, 1.5).error("owner unreachable"));
    }

    @Test
    void writesTheGoldenJson() {
        assertThat(StoredOwners.of(owners()).write(json)).isEqualTo(GOLDEN);
    }

    @Test
    void readsWhatItWrites() {
        StoredOwners read = StoredOwners.read(json, KEY, GOLDEN);
        assertThat(read).isEqualTo(StoredOwners.of(owners()));
        assertThat(read.toApi()).isEqualTo(owners());
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        StoredOwners read = StoredOwners.read(json, KEY, BEFORE_FORMATS);
        assertThat(read.format()).isZero();
        assertThat(read.toApi()).isEqualTo(owners());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        assertThatThrownBy(() -> StoredOwners.read(json, KEY, "{\"format\":2,\"owners\":{}}"))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("Redis key " + KEY)
                .hasMessageContaining("StoredOwners of format 2");
    }
}
