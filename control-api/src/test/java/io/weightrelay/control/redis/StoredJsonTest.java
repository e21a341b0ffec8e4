package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.service.problem.RelayException;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** How a stored record is told apart: its format, read before anything else is trusted. */
class StoredJsonTest {

    record Sample(@JsonSetter(nulls = Nulls.AS_EMPTY) int format, long size)
            implements StoredJson.Versioned {}

    private final JsonMapper json = JsonMapper.builder().build();

    @Test
    void aRecordWithoutAFormatIsFormatZero() {
        assertThat(StoredJson.read(json, "k", "{\"size\":3}", Sample.class, 1))
                .isEqualTo(new Sample(0, 3));
        assertThat(StoredJson.write(json, new Sample(1, 3))).isEqualTo("{\"format\":1,\"size\":3}");
    }

    @Test
    void aNewerFormatIsRefusedWhetherOrNotItBinds() {
        assertThatThrownBy(
                        () ->
                                StoredJson.read(
                                        json, "k", "{\"format\":2,\"size\":3}", Sample.class, 1))
                .isInstanceOf(RelayException.class)
                .hasMessage(
                        "Internal error: Redis key k holds a Sample of format 2; this control-api"
                                + " reads formats up to 1 (a newer control-api wrote it: run that"
                                + " release again)");
        RelayException e =
                (RelayException)
                        org.assertj.core.api.Assertions.catchThrowable(
                                () ->
                                        StoredJson.read(
                                                json,
                                                "k",
                                                "{\"format\":5,\"size\":{\"bytes\":3}}",
                                                Sample.class,
                                                1));
        assertThat(e.getBody().getProperties())
                .containsEntry("key", "k")
                .containsEntry("format", 5)
                .containsEntry("newestReadable", 1);
    }

    @Test
    void aRecordThatDoesNotReadIsNamedWithItsKey() {
        assertThatThrownBy(() -> StoredJson.read(json, "k", "{\"size\":\"big\"}", Sample.class, 1))
                .isInstanceOf(RelayException.class)
                .hasMessageStartingWith(
                        "Internal error: Redis key k does not hold a readable Sample (format 0): ");
        assertThatThrownBy(() -> StoredJson.read(json, "k", "not json", Sample.class, 1))
                .hasMessageContaining("Redis key k does not hold a readable Sample (format -1)");
    }
}
