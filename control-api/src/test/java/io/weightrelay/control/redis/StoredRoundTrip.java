package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.service.problem.RelayException;
import java.util.function.Function;
import org.assertj.core.api.AbstractThrowableAssert;
import tools.jackson.databind.json.JsonMapper;

/**
 * The promises every record control-api stores in Redis ({@link StoredJson.Versioned}) keeps, each
 * checked the same way for every record: it writes its golden JSON to the character, reads back
 * what it wrote, reads what releases before formats wrote as format 0, and refuses a newer format
 * with a problem naming the key and the format. Each {@code Stored*Test} pins its own record's JSON
 * and hands it here, so a promise is spelled once, not once per record.
 *
 * @param <S> the stored record
 * @param <A> what the record reads as (the contract's class it answers, or reshard's record)
 */
public record StoredRoundTrip<S extends StoredJson.Versioned, A>(
        Class<S> type, String key, Reader<S> reader, Function<S, A> answer) {

    /** A stored record's {@code read(json, key, text)}. */
    @FunctionalInterface
    public interface Reader<S> {
        S read(JsonMapper json, String key, String text);
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** {@code record} writes exactly {@code golden}. */
    public void writes(S record, String golden) {
        assertThat(record.write(JSON)).isEqualTo(golden);
    }

    /**
     * {@code golden} reads as {@code record}, which answers {@code answer}; returns what it read.
     */
    public S readsBack(String golden, S record, A answer) {
        S read = reader.read(JSON, key, golden);
        assertThat(read).isEqualTo(record);
        assertThat(this.answer.apply(read)).isEqualTo(answer);
        return read;
    }

    /** {@code beforeFormats} reads as format 0 and answers {@code answer}. */
    public void readsBeforeFormats(String beforeFormats, A answer) {
        S read = reader.read(JSON, key, beforeFormats);
        assertThat(read.format()).isZero();
        assertThat(this.answer.apply(read)).isEqualTo(answer);
    }

    /**
     * {@code newer}, of format {@code format}, is refused with a problem naming key and format;
     * returns the refusal for a record's own further checks.
     */
    public AbstractThrowableAssert<?, ? extends Throwable> refuses(String newer, int format) {
        return assertThatThrownBy(() -> reader.read(JSON, key, newer))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("Redis key " + key)
                .hasMessageContaining(type.getSimpleName() + " of format " + format);
    }
}
