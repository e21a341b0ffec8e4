package io.weightrelay.control.registry;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.api.common.model.Nic;
import io.weightrelay.control.redis.StoredJson;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;

/**
 * The NICs a loader registered, as its hash keeps them in {@code nics} (empty when it named none).
 * Field names are the contract's {@code Nic}'s; format 0, written before formats existed, is a bare
 * array of that class's JSON.
 */
public record StoredNics(@JsonSetter(nulls = Nulls.AS_EMPTY) int format, List<StoredNic> nics)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    @JsonCreator(mode = JsonCreator.Mode.PROPERTIES)
    public StoredNics {
        nics = List.copyOf(nics);
    }

    /** Format 0: the bare array. */
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    static StoredNics beforeFormats(List<StoredNic> nics) {
        return new StoredNics(0, nics);
    }

    /** A NIC and its bandwidth in Gbit/s. */
    public record StoredNic(String name, double gbps) {}

    /** The NICs of a registration ({@code null}: none). */
    static StoredNics of(List<Nic> api) {
        List<StoredNic> nics = new ArrayList<>(api == null ? 0 : api.size());
        if (api != null) {
            for (Nic n : api) {
                nics.add(new StoredNic(n.getName(), n.getGbps()));
            }
        }
        return new StoredNics(FORMAT, nics);
    }

    public List<Nic> toApi() {
        List<Nic> out = new ArrayList<>(nics.size());
        for (StoredNic n : nics) {
            out.add(new Nic(n.name(), n.gbps()));
        }
        return out;
    }

    /** The NICs stored under {@code key} (a loader's hash). */
    public static StoredNics read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredNics.class, FORMAT);
    }
}
