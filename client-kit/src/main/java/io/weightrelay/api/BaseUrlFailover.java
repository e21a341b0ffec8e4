package io.weightrelay.api;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpRequest;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;
import org.springframework.http.client.support.HttpRequestWrapper;

/**
 * Fails a generated client over between several instances of one service (control-api behind the
 * same Redis): the client's base path is {@link #primary()}, and a request whose connection cannot
 * be made or breaks (refused, reset, timed out: an {@link IOException}) is sent again, with the
 * same path and body, to the next URL, and so on once round the list. The URL that answered is
 * tried first from then on. An HTTP answer, even a 5xx, is returned as it is: the instance is
 * there, and the caller's own retry decides.
 *
 * <p>With several URLs the answer's body is read here, whole, before it is returned: an instance
 * killed after it sent its status line but before the end of its body (seen in the fault suite's
 * control-api-killed case, where a loader's listing of its group failed with "Error while
 * extracting response") is a broken connection like any other, and the request goes to the next
 * URL. Control-api's answers are read whole by their callers anyway.
 *
 * <p>A request whose connection broke after it was sent may have been carried out; control-api's
 * operations are idempotent or fenced (request nonces, epochs), so sending it again is safe. Add it
 * to a generated client's {@code RestClient} builder; thread safe.
 */
public final class BaseUrlFailover implements ClientHttpRequestInterceptor {

    private final List<String> bases;
    private volatile int current;

    /**
     * @param baseUrls one base URL or several separated by commas ({@code
     *     http://a:8080,http://b:8080}), as the services' {@code control-url} properties take them
     * @throws IllegalArgumentException when no URL is given or one is not an absolute http(s) URL
     */
    public BaseUrlFailover(String baseUrls) {
        this.bases = parse(baseUrls);
    }

    /**
     * The base URLs in {@code baseUrls}, trimmed, without a trailing slash.
     *
     * @throws IllegalArgumentException naming the URL that is not an absolute http(s) URL
     */
    public static List<String> parse(String baseUrls) {
        List<String> out = new ArrayList<>();
        for (String part : baseUrls == null ? new String[0] : baseUrls.split(",")) {
            String url = part.trim();
            while (url.endsWith("/")) {
                url = url.substring(0, url.length() - 1);
            }
            if (url.isEmpty()) {
                continue;
            }
            URI uri;
            try {
                uri = URI.create(url);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("base URL '" + url + "' is not a URL", e);
            }
            if (uri.getHost() == null
                    || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))) {
                throw new IllegalArgumentException(
                        "base URL '" + url + "' is not an absolute http(s) URL");
            }
            out.add(url);
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no base URL in '" + baseUrls + "'");
        }
        return List.copyOf(out);
    }

    /** The first URL: what the generated client's base path is set to. */
    public String primary() {
        return bases.get(0);
    }

    public List<String> baseUrls() {
        return bases;
    }

    /** Every URL, comma-separated, for messages. */
    @Override
    public String toString() {
        return String.join(",", bases);
    }

    @Override
    public ClientHttpResponse intercept(
            HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
            throws IOException {
        String uri = request.getURI().toString();
        String rest = null;
        for (String base : bases) {
            if (uri.startsWith(base)
                    && (uri.length() == base.length()
                            || "/?#".indexOf(uri.charAt(base.length())) >= 0)) {
                rest = uri.substring(base.length());
                break;
            }
        }
        if (rest == null || bases.size() == 1) {
            return execution.execute(request, body);
        }
        int first = current;
        IOException failure = null;
        for (int i = 0; i < bases.size(); i++) {
            int index = (first + i) % bases.size();
            URI target = URI.create(bases.get(index) + rest);
            try (ClientHttpResponse response =
                    execution.execute(
                            new HttpRequestWrapper(request) {
                                @Override
                                public URI getURI() {
                                    return target;
                                }
                            },
                            body)) {
                ClientHttpResponse whole = new Buffered(response);
                current = index;
                return whole;
            } catch (IOException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        throw new IOException(
                "no instance of " + this + " answered " + request.getMethod() + " " + rest,
                failure);
    }

    /** An answer whose status, headers and whole body were read before the connection closed. */
    private static final class Buffered implements ClientHttpResponse {
        private final HttpStatusCode status;
        private final String statusText;
        private final HttpHeaders headers;
        private final byte[] body;

        Buffered(ClientHttpResponse response) throws IOException {
            this.status = response.getStatusCode();
            this.statusText = response.getStatusText();
            HttpHeaders copy = new HttpHeaders();
            copy.putAll(response.getHeaders());
            this.headers = HttpHeaders.readOnlyHttpHeaders(copy);
            try (InputStream in = response.getBody()) {
                this.body = in.readAllBytes();
            }
        }

        @Override
        public HttpStatusCode getStatusCode() {
            return status;
        }

        @Override
        public String getStatusText() {
            return statusText;
        }

        @Override
        public HttpHeaders getHeaders() {
            return headers;
        }

        @Override
        public InputStream getBody() {
            return new ByteArrayInputStream(body);
        }

        @Override
        public void close() {}
    }
}
