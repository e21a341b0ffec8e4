package io.weightrelay.dataplane;

import java.util.List;

/**
 * A read of a Mooncake object whose ranges landed after the read lease the master granted for them
 * had run out ({@code LEASE_EXPIRED}, -707), in the first read and again in the one retry with a
 * fresh lease: the bytes that landed are not trusted (the master may have removed the object and
 * reused its memory once the lease ended), so the read fails. A read this slow twice running means
 * the reading agent or the master was starved for longer than half the master's {@code
 * --default_kv_lease_ttl}: a TTL too short for the machine. {@link #key()} names the object, {@link
 * #objectOffsets()} the ranges that expired.
 */
public final class ReadLeaseExpiredException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    private final List<Long> objectOffsets;

    public ReadLeaseExpiredException(String key, List<Long> objectOffsets) {
        super(
                DataplaneError.TIMEOUT,
                key,
                "Mooncake's read lease on '"
                        + key
                        + "' ran out before "
                        + (objectOffsets.size() == 1
                                ? "its range at object offset " + objectOffsets.get(0) + " landed"
                                : objectOffsets.size()
                                        + " of its ranges (object offsets "
                                        + objectOffsets
                                        + ") landed")
                        + ", in the read and in its retry with a fresh lease (LEASE_EXPIRED, -707):"
                        + " the read outlasted the master's --default_kv_lease_ttl twice running;"
                        + " the bytes that landed are not trusted");
        this.objectOffsets = List.copyOf(objectOffsets);
    }

    /** The object's store key. */
    public String key() {
        return subject();
    }

    /** Where in the object the ranges start whose lease ran out in the retry too. */
    public List<Long> objectOffsets() {
        return objectOffsets;
    }
}
