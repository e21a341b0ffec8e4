package io.weightrelay.api;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.zip.GZIPOutputStream;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * Sends request bodies of at least {@link #THRESHOLD} bytes gzip-compressed ({@code
 * Content-Encoding: gzip}, which control-api accepts): a Kimi-K2 manifest is 10 MB of JSON and
 * about 1 MB compressed. Add it to a generated client's {@code RestClient} builder. Thread safe.
 */
public final class GzipRequestBodies implements ClientHttpRequestInterceptor {

    /** Bodies below this go as they are: compressing them saves nothing worth the CPU. */
    public static final int THRESHOLD = 64 * 1024;

    @Override
    public ClientHttpResponse intercept(
            HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
            throws IOException {
        if (body.length < THRESHOLD
                || request.getHeaders().containsHeader(HttpHeaders.CONTENT_ENCODING)) {
            return execution.execute(request, body);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(1024, body.length / 8));
        try (GZIPOutputStream gzip = new GZIPOutputStream(out, 64 * 1024)) {
            gzip.write(body);
        }
        byte[] compressed = out.toByteArray();
        request.getHeaders().set(HttpHeaders.CONTENT_ENCODING, "gzip");
        request.getHeaders().setContentLength(compressed.length);
        return execution.execute(request, compressed);
    }
}
