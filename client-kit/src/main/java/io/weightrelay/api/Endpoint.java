package io.weightrelay.api;

import java.time.Duration;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

/**
 * How one service is called, and the one way a generated client's {@code RestClient} is built for
 * it: the base URL (or several instances', comma-separated, failed over by {@link
 * BaseUrlFailover}), the bearer token sent with every request (none when empty or null), and the
 * connect and read timeouts of one call (zero or null: none). Every client of the contracts (the
 * services, the trainer client, the lab) is built from one by {@link RelayClients}:
 *
 * <pre>{@code
 * ApiClient client = RelayClients.of(endpoint).control();
 * }</pre>
 *
 * Retries are the caller's ({@code RemoteCalls} in service-common for the services).
 */
public record Endpoint(
        String baseUrls, String token, Duration connectTimeout, Duration readTimeout) {

    /**
     * @throws IllegalArgumentException when no URL is given or one is not an absolute http(s) URL
     */
    public Endpoint {
        BaseUrlFailover.parse(baseUrls);
    }

    /** {@code baseUrls} with {@code token} and no timeouts. */
    public static Endpoint of(String baseUrls, String token) {
        return new Endpoint(baseUrls, token, null, null);
    }

    /** The same service called with another token. */
    public Endpoint withToken(String other) {
        return new Endpoint(baseUrls, other, connectTimeout, readTimeout);
    }

    /** The same service with these connect and read timeouts. */
    public Endpoint withTimeouts(Duration connect, Duration read) {
        return new Endpoint(baseUrls, token, connect, read);
    }

    /** The first base URL, without a trailing slash: what the generated client's base path is. */
    public String basePath() {
        return BaseUrlFailover.parse(baseUrls).get(0);
    }

    /**
     * {@code generated} (a generated client's {@code ApiClient.buildRestClientBuilder()}, which
     * holds the contract's JSON mapping) with the timeouts, the token, the interceptors given
     * (outermost first) and the failover between the base URLs. {@link RelayClients} builds every
     * generated client with it; call that, not this.
     */
    public RestClient restClient(
            RestClient.Builder generated, ClientHttpRequestInterceptor... interceptors) {
        SimpleClientHttpRequestFactory factory = new SimpleClientHttpRequestFactory();
        if (connectTimeout != null) {
            factory.setConnectTimeout(connectTimeout);
        }
        if (readTimeout != null) {
            factory.setReadTimeout(readTimeout);
        }
        generated.requestFactory(factory);
        for (ClientHttpRequestInterceptor i : interceptors) {
            generated.requestInterceptor(i);
        }
        generated.requestInterceptor(new BaseUrlFailover(baseUrls));
        if (token != null && !token.isEmpty()) {
            generated.defaultHeaders(h -> h.setBearerAuth(token));
        }
        return generated.build();
    }

    /** Base URLs and timeouts; never the token. */
    @Override
    public String toString() {
        return baseUrls + " (connect " + connectTimeout + ", read " + readTimeout + ")";
    }
}
