package io.weightrelay.trainer.client;

import io.weightrelay.api.BaseUrlFailover;
import io.weightrelay.api.ControlManifests;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.RemoteProblem;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.model.AbortRequest;
import io.weightrelay.api.control.client.model.OpenGenerationRequest;
import io.weightrelay.api.control.client.model.TensorAssignment;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.springframework.web.client.HttpServerErrorException;
import org.springframework.web.client.RestClientResponseException;
import tools.jackson.databind.JsonNode;

/**
 * {@link Coordinator} over control-api's generated REST client. Thread safe.
 *
 * <p>A 503 (Redis away, control-api overloaded) is waited out: each call is tried again after the
 * answer's {@code Retry-After} until {@link #RETRY_BUDGET} has passed, so that a trainer step does
 * not fail because control-api's state store restarted. Every call is safe to repeat: an open is
 * idempotent by trainer step, and a commit or abort whose first answer was lost (a 503 after Redis
 * ran it) finds the generation already ACTIVE or ABORTED, which counts as done.
 */
public final class RestCoordinator implements Coordinator {

    /** How long one call keeps retrying 503 answers before it fails. */
    static final Duration RETRY_BUDGET = Duration.ofSeconds(60);

    private static final Duration MAX_RETRY_WAIT = Duration.ofSeconds(5);

    private final String baseUrl;
    private final GenerationsApi generations;
    private final long maxFragmentBytes;

    /**
     * The newest generation control-api gave this coordinator, sent with every open so that ids
     * continue above it even when Redis lost its data and its counter started again.
     */
    private final java.util.concurrent.atomic.AtomicLong newest =
            new java.util.concurrent.atomic.AtomicLong();

    /**
     * @param baseUrl control-api's base URL, or several instances' separated by commas (each call
     *     fails over to the next when one cannot be reached: {@link BaseUrlFailover})
     * @param maxFragmentBytes the bound the manifest's fragments were cut with (sent with it)
     */
    public RestCoordinator(String baseUrl, String token, Duration timeout, long maxFragmentBytes) {
        Endpoint control = new Endpoint(baseUrl, token, timeout, timeout);
        this.baseUrl = baseUrl;
        // A manifest's open is 10 MB of JSON at Kimi-K2 scale: it goes gzip-compressed.
        this.generations =
                new GenerationsApi(RelayClients.of(control).gzipRequestBodies().control());
        this.maxFragmentBytes = maxFragmentBytes;
    }

    @Override
    public Coordinator.OpenedGeneration open(
            SourceManifest manifest, List<String> trainerNodes, long trainerStep) {
        OpenGenerationRequest request =
                ControlManifests.openRequest(manifest, trainerNodes, trainerStep, maxFragmentBytes)
                        .afterGeneration(newest.get() > 0 ? newest.get() : null);
        io.weightrelay.api.control.client.model.OpenedGeneration opened =
                call(
                        "open generation of step " + trainerStep,
                        () -> generations.openGeneration(manifest.model(), request));
        Map<String, String> nodeOf = new HashMap<>();
        for (TensorAssignment a : opened.getAssignment().getTensors()) {
            nodeOf.put(a.getTensor(), a.getNode());
        }
        long id = opened.getGeneration().getGeneration();
        newest.accumulateAndGet(id, Math::max);
        return new Coordinator.OpenedGeneration(id, nodeOf);
    }

    @Override
    public void commit(GenerationId generation) {
        call(
                "commit " + generation.model() + "/" + generation.generation(),
                () -> generations.commitGeneration(generation.model(), generation.generation()),
                "commit-conflict",
                "ACTIVE");
    }

    @Override
    public void abort(GenerationId generation, String reason) {
        String bounded = reason.length() > 2000 ? reason.substring(0, 2000) : reason;
        call(
                "abort " + generation.model() + "/" + generation.generation(),
                () ->
                        generations.abortGeneration(
                                generation.model(),
                                generation.generation(),
                                new AbortRequest().reason(bounded)),
                "generation-not-open",
                "ABORTED");
    }

    private <T> T call(String what, Supplier<T> body) {
        return call(what, body, null, null);
    }

    /**
     * Runs {@code body}, waiting out 503 answers; after a retry, a conflict of type {@code
     * doneType} whose {@code state} is {@code doneState} means an earlier attempt won (its answer
     * was lost), and the call returns null.
     */
    private <T> T call(String what, Supplier<T> body, String doneType, String doneState) {
        long deadline = System.nanoTime() + RETRY_BUDGET.toNanos();
        boolean retried = false;
        while (true) {
            try {
                return body.get();
            } catch (HttpServerErrorException.ServiceUnavailable e) {
                if (System.nanoTime() > deadline) {
                    throw RelayCallException.of(
                            "control-api " + baseUrl,
                            what + " (still unavailable after " + RETRY_BUDGET.toSeconds() + " s)",
                            e);
                }
                Duration wait = RemoteProblem.retryAfter(e).orElse(Duration.ofSeconds(1));
                Pause.sleep(
                        wait.compareTo(MAX_RETRY_WAIT) > 0 ? MAX_RETRY_WAIT : wait,
                        "control-api was unavailable");
                retried = true;
            } catch (RuntimeException e) {
                RelayCallException failed =
                        RelayCallException.of("control-api " + baseUrl, what, e);
                if (retried
                        && failed.problemType().equals(doneType)
                        && doneState.equals(stateOf(e))) {
                    return null;
                }
                throw failed;
            }
        }
    }

    private static String stateOf(RuntimeException e) {
        if (!(e instanceof RestClientResponseException r)) {
            return null;
        }
        JsonNode state = RemoteProblem.of(r).member("state");
        return state == null ? null : state.asString();
    }
}
