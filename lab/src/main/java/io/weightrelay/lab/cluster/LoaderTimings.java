package io.weightrelay.lab.cluster;

import java.time.Duration;

/**
 * How quickly a lab notices a loader that died: its heartbeat, how long control-api counts it alive
 * after the last one, and the lease it takes on a generation. Shorter than the services' defaults
 * so that the fault cases whose loader dies for good wait out seconds, not minutes; every lab, on
 * one machine or on hosts, uses the same heartbeat and registration TTL.
 */
public final class LoaderTimings {

    /**
     * The lease a lab's loader takes when it prepares ({@code relay.loader.lease-ttl}, 2 minutes by
     * default): its heartbeats carry it while it lives, so this is how long a loader that died
     * keeps what it served from collection. Short here so that the fault suite sees that happen;
     * with {@link #LOADER_HEARTBEAT} it still outlives five heartbeats lost in a row.
     */
    public static final Duration LOADER_LEASE_TTL = Duration.ofSeconds(12);

    /**
     * How often a lab's loader heartbeats ({@code relay.loader.heartbeat}, 5 s by default). Faster
     * here so that {@link #LOADER_TTL} and {@link #LOADER_LEASE_TTL} can be short while a live
     * loader keeps at least the default's slack in heartbeats.
     */
    public static final Duration LOADER_HEARTBEAT = Duration.ofSeconds(2);

    /**
     * How long control-api counts a lab's loader alive past its last heartbeat ({@code
     * relay.registry.loader-ttl}, 15 s by default): the time the fault cases whose loader dies for
     * good wait for its registration to expire, which is what they prove, not how long it takes. It
     * outlives three heartbeats lost in a row (the default outlives two).
     */
    public static final Duration LOADER_TTL = Duration.ofSeconds(8);

    private LoaderTimings() {}
}
