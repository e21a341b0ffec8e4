package io.weightrelay.api;

import java.util.ArrayList;
import java.util.List;
import org.springframework.http.client.ClientHttpRequestInterceptor;

/**
 * The one factory of the generated clients: every caller of a relay service (the services, the
 * trainer client, the lab, the tests) gets its {@code ApiClient} here, so a client is configured in
 * one place and the same way whichever contract it speaks. What a client gets:
 *
 * <ul>
 *   <li>from the {@link Endpoint}: the base URL or several instances' (failed over by {@link
 *       BaseUrlFailover}), the bearer token, the connect and read timeouts;
 *   <li>asked for here: {@link #gzipRequestBodies()} (large bodies sent compressed: the trainer's
 *       open), {@link #gzipResponses()} (answers inflated: the encoded manifest), and any
 *       interceptor of the caller's own ({@link #with}, the benches' wire counter).
 * </ul>
 *
 * <p>A refused call is thrown as the generated client throws it (a {@code
 * RestClientResponseException}); {@link RemoteProblem#of} decodes its problem. Retries and circuit
 * breakers are the caller's, not the client's (why: the {@linkplain io.weightrelay.api package}).
 *
 * <pre>{@code
 * GenerationsApi generations =
 *         new GenerationsApi(RelayClients.of(Endpoint.of(url, token)).gzipResponses().control());
 * }</pre>
 *
 * Immutable: each option returns a new factory. The clients it builds are thread safe.
 */
public final class RelayClients {

    private final Endpoint endpoint;
    private final List<ClientHttpRequestInterceptor> interceptors;

    private RelayClients(Endpoint endpoint, List<ClientHttpRequestInterceptor> interceptors) {
        this.endpoint = endpoint;
        this.interceptors = List.copyOf(interceptors);
    }

    /** Clients of the service at {@code endpoint}, with no compression and no interceptor. */
    public static RelayClients of(Endpoint endpoint) {
        return new RelayClients(endpoint, List.of());
    }

    /** Request bodies of at least {@link GzipRequestBodies#THRESHOLD} bytes go gzip-compressed. */
    public RelayClients gzipRequestBodies() {
        return with(new GzipRequestBodies());
    }

    /** Answers are asked for gzip-compressed and inflated as they are read. */
    public RelayClients gzipResponses() {
        return with(new GzipResponses());
    }

    /**
     * {@code interceptor} added inside those given before it (the first given sees the request
     * first) and outside the failover between base URLs.
     */
    public RelayClients with(ClientHttpRequestInterceptor interceptor) {
        List<ClientHttpRequestInterceptor> more = new ArrayList<>(interceptors);
        more.add(interceptor);
        return new RelayClients(endpoint, more);
    }

    public Endpoint endpoint() {
        return endpoint;
    }

    /** A client of the control-api contract. */
    public io.weightrelay.api.control.client.invoker.ApiClient control() {
        var client =
                new io.weightrelay.api.control.client.invoker.ApiClient(
                        endpoint.restClient(
                                io.weightrelay.api.control.client.invoker.ApiClient
                                        .buildRestClientBuilder(),
                                interceptors()));
        client.setBasePath(endpoint.basePath());
        return client;
    }

    /** A client of the publisher contract. */
    public io.weightrelay.api.publisher.client.invoker.ApiClient publisher() {
        var client =
                new io.weightrelay.api.publisher.client.invoker.ApiClient(
                        endpoint.restClient(
                                io.weightrelay.api.publisher.client.invoker.ApiClient
                                        .buildRestClientBuilder(),
                                interceptors()));
        client.setBasePath(endpoint.basePath());
        return client;
    }

    /** A client of the loader contract. */
    public io.weightrelay.api.loader.client.invoker.ApiClient loader() {
        var client =
                new io.weightrelay.api.loader.client.invoker.ApiClient(
                        endpoint.restClient(
                                io.weightrelay.api.loader.client.invoker.ApiClient
                                        .buildRestClientBuilder(),
                                interceptors()));
        client.setBasePath(endpoint.basePath());
        return client;
    }

    private ClientHttpRequestInterceptor[] interceptors() {
        return interceptors.toArray(ClientHttpRequestInterceptor[]::new);
    }
}
