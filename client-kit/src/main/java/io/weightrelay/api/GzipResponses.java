package io.weightrelay.api;

import java.io.IOException;
import java.io.InputStream;
import java.util.zip.GZIPInputStream;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * Asks for gzip-compressed responses ({@code Accept-Encoding: gzip}) and inflates those that come
 * so: control-api sends a Kimi-K2 encoded manifest (12 MB, about 1 MB compressed) that way, and
 * every publisher and loader of a generation reads it. The body a caller reads is the identity
 * body, whatever crossed the wire. Add it to a generated client's {@code RestClient} builder.
 * Thread safe.
 */
public final class GzipResponses implements ClientHttpRequestInterceptor {

    @Override
    public ClientHttpResponse intercept(
            HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
            throws IOException {
        if (!request.getHeaders().containsHeader(HttpHeaders.ACCEPT_ENCODING)) {
            request.getHeaders().set(HttpHeaders.ACCEPT_ENCODING, "gzip");
        }
        ClientHttpResponse response = execution.execute(request, body);
        String encoding = response.getHeaders().getFirst(HttpHeaders.CONTENT_ENCODING);
        if (encoding == null || !encoding.trim().equalsIgnoreCase("gzip")) {
            return response;
        }
        return new Inflated(response);
    }

    /** The response with its body inflated and the headers describing the inflated body. */
    private static final class Inflated extends WrappedResponse {
        private final HttpHeaders headers;

        Inflated(ClientHttpResponse wire) {
            super(wire);
            HttpHeaders copy = new HttpHeaders();
            copy.putAll(wire.getHeaders());
            copy.remove(HttpHeaders.CONTENT_ENCODING);
            copy.remove(HttpHeaders.CONTENT_LENGTH);
            this.headers = HttpHeaders.readOnlyHttpHeaders(copy);
        }

        @Override
        public HttpHeaders getHeaders() {
            return headers;
        }

        @Override
        protected InputStream wrap(InputStream body) throws IOException {
            return new GZIPInputStream(body, 64 * 1024);
        }
    }
}
