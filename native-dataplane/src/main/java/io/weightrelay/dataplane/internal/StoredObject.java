package io.weightrelay.dataplane.internal;

import java.util.List;

/** A published object's directory entry: size, pin flag and one location per replica. */
public record StoredObject(String key, long size, boolean hardPin, List<Replica> replicas) {

    /** One replica: the object's bytes at [offset, offset + size) of a segment. */
    public record Replica(String segment, long offset) {}
}
