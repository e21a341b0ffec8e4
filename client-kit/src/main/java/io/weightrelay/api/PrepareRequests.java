package io.weightrelay.api;

import io.weightrelay.api.control.client.model.UpdatePreparationRequest;
import java.time.Duration;

/**
 * The body of a loader's one prepare call to control-api ({@code UpdatesApi.prepareUpdate}), with
 * the bounds the contract puts on its durations. Built here for loader-service and for the lab's
 * {@code bench control-plane}, so that the bench prepares as the service does.
 */
public final class PrepareRequests {

    private PrepareRequests() {}

    /**
     * @param instance the loader's instance: its lease, its part of the plan
     * @param leaseTtl how long its lease on the generation lasts unless renewed
     * @param phaseTimeout the session's phase deadline, should this call start it
     * @param knownBuffersDigest the digest of the group's buffers the caller holds (null: none; the
     *     answer then lists them)
     */
    public static UpdatePreparationRequest of(
            String instance, Duration leaseTtl, Duration phaseTimeout, String knownBuffersDigest) {
        return new UpdatePreparationRequest()
                .instance(instance)
                .leaseTtlSeconds(leaseSeconds(leaseTtl))
                .phaseTimeoutSeconds((int) Math.max(1, Math.min(3600, phaseTimeout.toSeconds())))
                .knownBuffersDigest(knownBuffersDigest);
    }

    /** A lease's TTL as the contract takes it: whole seconds, 1 to a day. */
    public static int leaseSeconds(Duration ttl) {
        return (int) Math.min(86400, Math.max(1, ttl.toSeconds()));
    }
}
