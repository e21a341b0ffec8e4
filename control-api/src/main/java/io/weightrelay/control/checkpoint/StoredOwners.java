package io.weightrelay.control.checkpoint;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.control.redis.StoredJson;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;

/**
 * What each owner did in a generation's last checkpoint, as its checkpoint hash keeps it in {@code
 * owners}. Field names are the contract's {@code OwnerCheckpoint}'s; format 0, written before
 * formats existed, is a bare array of that class's JSON.
 */
public record StoredOwners(@JsonSetter(nulls = Nulls.AS_EMPTY) int format, List<Owner> owners)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    @JsonCreator(mode = JsonCreator.Mode.PROPERTIES)
    public StoredOwners {
        owners = List.copyOf(owners);
    }

    /** Format 0: the bare array. */
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    static StoredOwners beforeFormats(List<Owner> owners) {
        return new StoredOwners(0, owners);
    }

    /** One owner's part: its file relative to the checkpoint directory, or its error. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Owner(
            String segment, long objects, long bytes, double seconds, String file, String error) {}

    static StoredOwners of(List<OwnerCheckpoint> api) {
        List<Owner> owners = new ArrayList<>(api.size());
        for (OwnerCheckpoint o : api) {
            owners.add(
                    new Owner(
                            o.getSegment(),
                            o.getObjects(),
                            o.getBytes(),
                            o.getSeconds(),
                            o.getFile(),
                            o.getError()));
        }
        return new StoredOwners(FORMAT, owners);
    }

    public List<OwnerCheckpoint> toApi() {
        List<OwnerCheckpoint> out = new ArrayList<>(owners.size());
        for (Owner o : owners) {
            OwnerCheckpoint c =
                    new OwnerCheckpoint(o.segment(), o.objects(), o.bytes(), o.seconds());
            c.setFile(o.file());
            c.setError(o.error());
            out.add(c);
        }
        return out;
    }

    /** The owners stored under {@code key} (a checkpoint's hash). */
    public static StoredOwners read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredOwners.class, FORMAT);
    }
}
