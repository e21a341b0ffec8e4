package io.weightrelay.control.redis;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * JSON that control-api keeps in Redis: always a record of our own that carries its format version
 * ({@code "format": 1}), never a class generated from the contracts, so changing a contract never
 * changes what is stored, and state written by one release is read by the next.
 *
 * <p>Each stored record declares {@code @JsonSetter(nulls = Nulls.AS_EMPTY) int format}: JSON
 * written before formats existed has none and reads as format 0, in the field names of the
 * generated class it was written from, which the records keep. A record of a format newer than the
 * reader knows (written by a newer control-api, then rolled back) is refused with a problem naming
 * the key and the format, never misread and never a bare Jackson error.
 */
public final class StoredJson {

    private StoredJson() {}

    /** A stored record: its format version is part of its JSON. */
    public interface Versioned {
        /** 0 for JSON written before formats existed. */
        int format();

        /** This record as the JSON to store: its {@code format} first, then its fields. */
        default String write(JsonMapper json) {
            return StoredJson.write(json, this);
        }
    }

    /** {@code record} as JSON: its {@code format} first, then its fields. */
    public static String write(JsonMapper json, Versioned record) {
        return json.writeValueAsString(record);
    }

    /**
     * Reads the JSON stored under {@code key} as {@code type}, whose newest format is {@code
     * newest}: one parse on the common path.
     *
     * @throws RelayException (500) naming the key when the record is of a newer format, or does not
     *     read as {@code type} at all
     */
    public static <T extends Versioned> T read(
            JsonMapper json, String key, String text, Class<T> type, int newest) {
        T record;
        try {
            record = json.readValue(text, type);
        } catch (JacksonException e) {
            int format = formatOf(json, text);
            if (format > newest) {
                throw newerFormat(key, type, format, newest);
            }
            throw CommonProblems.INTERNAL
                    .exception(
                            "Redis key "
                                    + key
                                    + " does not hold a readable "
                                    + type.getSimpleName()
                                    + " (format "
                                    + format
                                    + "): "
                                    + e.getOriginalMessage())
                    .with("key", key)
                    .with("format", format);
        }
        if (record.format() > newest) {
            throw newerFormat(key, type, record.format(), newest);
        }
        return record;
    }

    private static RelayException newerFormat(String key, Class<?> type, int format, int newest) {
        return CommonProblems.INTERNAL
                .exception(
                        "Redis key "
                                + key
                                + " holds a "
                                + type.getSimpleName()
                                + " of format "
                                + format
                                + "; this control-api reads formats up to "
                                + newest
                                + " (a newer control-api wrote it: run that release again)")
                .with("key", key)
                .with("format", format)
                .with("newestReadable", newest);
    }

    /** The format a record that did not read claims, -1 when it claims none that reads. */
    private static int formatOf(JsonMapper json, String text) {
        try {
            JsonNode node = json.readTree(text);
            if (node.isArray()) {
                return 0;
            }
            JsonNode format = node.get("format");
            return format == null ? 0 : format.isInt() ? format.intValue() : -1;
        } catch (JacksonException e) {
            return -1;
        }
    }
}
