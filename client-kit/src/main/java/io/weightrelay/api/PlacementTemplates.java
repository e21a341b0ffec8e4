package io.weightrelay.api;

import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.reshard.placement.FragmentTemplate;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.springframework.http.MediaType;
import org.springframework.web.client.RestClientResponseException;
import tools.jackson.databind.JsonNode;

/**
 * How a loader registers parameter-direct workers with control-api: each worker names the digest of
 * its rank's fragment template instead of sending its fragments; control-api answers 409 {@code
 * placement-template-not-found} listing in {@code missing} the digests it does not hold, the loader
 * uploads those ({@code PUT /api/v1/placements/{digest}}) and registers again. Written once, for
 * loader-service and for the lab's {@code bench control-plane}, so that the bench plays the
 * protocol the service speaks rather than a copy of it.
 */
public final class PlacementTemplates {

    /** The problem type of a registration naming templates control-api does not hold. */
    public static final String NOT_FOUND = "placement-template-not-found";

    private PlacementTemplates() {}

    /**
     * Sends a registration with {@code send}; when control-api answers that it lacks templates,
     * uploads with {@code upload} those of {@code templates} it lists (every one, when it lists
     * none) and sends the registration again. Any other failure is thrown as {@code send} threw it.
     *
     * @param send the registration call; its failure is a {@link RemoteCallException} (the
     *     services' clients) or the generated client's {@link RestClientResponseException}
     */
    public static <T> T register(
            Supplier<T> send,
            Collection<FragmentTemplate> templates,
            Consumer<FragmentTemplate> upload) {
        try {
            return send.get();
        } catch (RemoteCallException | RestClientResponseException e) {
            RemoteProblem problem =
                    e instanceof RestClientResponseException r
                            ? RemoteProblem.of(r)
                            : ((RemoteCallException) e).problem();
            if (problem == null || !problem.is(NOT_FOUND)) {
                throw e;
            }
            Set<String> missing = missing(problem);
            for (FragmentTemplate t : templates) {
                if (missing == null || missing.contains(t.digest())) {
                    upload.accept(t);
                }
            }
            return send.get();
        }
    }

    /**
     * The digests a {@code placement-template-not-found} problem lists in {@code missing}, so only
     * those are uploaded; null when the answer does not say (then every template goes up).
     */
    public static Set<String> missing(RemoteProblem problem) {
        JsonNode missing = problem == null ? null : problem.member("missing");
        if (missing == null || !missing.isArray()) {
            return null;
        }
        Set<String> out = new HashSet<>();
        missing.forEach(d -> out.add(d.asString()));
        return out;
    }

    /**
     * Stores {@code template} in control-api under its digest, with {@code control}'s base URL,
     * token and interceptors. The generated client has no such call: the body is the template's
     * binary encoding, which the contract declares as octets.
     */
    public static void upload(ApiClient control, FragmentTemplate template) {
        control.getRestClient()
                .put()
                .uri(control.getBasePath() + "/api/v1/placements/{digest}", template.digest())
                .contentType(MediaType.APPLICATION_OCTET_STREAM)
                .body(template.encoded())
                .retrieve()
                .toBodilessEntity();
    }
}
