package io.weightrelay.api;

import java.io.IOException;
import java.io.InputStream;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.client.ClientHttpResponse;

/**
 * A client response that is the one it wraps but for its body, which a subclass reads through a
 * stream of its own (inflating it, counting it), opened once on the first {@link #getBody()}.
 */
public abstract class WrappedResponse implements ClientHttpResponse {
    private final ClientHttpResponse wrapped;
    private InputStream body;

    protected WrappedResponse(ClientHttpResponse wrapped) {
        this.wrapped = wrapped;
    }

    /** The stream the caller reads, over the wrapped response's body. */
    protected abstract InputStream wrap(InputStream body) throws IOException;

    @Override
    public HttpStatusCode getStatusCode() throws IOException {
        return wrapped.getStatusCode();
    }

    @Override
    public String getStatusText() throws IOException {
        return wrapped.getStatusText();
    }

    @Override
    public HttpHeaders getHeaders() {
        return wrapped.getHeaders();
    }

    @Override
    public InputStream getBody() throws IOException {
        if (body == null) {
            body = wrap(wrapped.getBody());
        }
        return body;
    }

    @Override
    public void close() {
        wrapped.close();
    }
}
