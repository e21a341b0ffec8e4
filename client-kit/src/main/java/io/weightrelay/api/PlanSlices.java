package io.weightrelay.api;

import io.weightrelay.api.control.client.invoker.ApiClient;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;

/**
 * How a loader fetches its slice of a plan, all it reads of one: asked for gzip-compressed
 * (control-api compressed it once, when it computed the plan; a sixth of the bytes cross the wire)
 * and handed back as it came. One request for loader-service and the lab's {@code bench
 * control-plane}, which decode it with {@code Slice.decode(body.inflated())}.
 */
public final class PlanSlices {

    private PlanSlices() {}

    /**
     * {@code instance}'s slice of plan {@code planId}, as it crossed the wire. Call it with a
     * client that does not inflate answers itself ({@link RelayClients#gzipResponses()} off): the
     * caller inflates.
     */
    public static EncodedBody fetch(ApiClient control, String planId, String instance) {
        return EncodedBody.of(
                control.getRestClient()
                        .get()
                        .uri(
                                control.getBasePath() + "/api/v1/plans/{planId}/slices/{instance}",
                                planId,
                                instance)
                        .header(HttpHeaders.ACCEPT_ENCODING, "gzip")
                        .accept(
                                MediaType.APPLICATION_OCTET_STREAM,
                                MediaType.APPLICATION_PROBLEM_JSON)
                        .retrieve()
                        .toEntity(byte[].class));
    }
}
