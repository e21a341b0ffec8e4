package io.weightrelay.lab.bench;

import io.weightrelay.api.WrappedResponse;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * What crosses the wire between a {@code bench control-plane} run's players and control-api: counts
 * the bytes of every request body and every response body, keeping the largest of each with the
 * call that made it, and retries a 503 that carries {@code Retry-After}, as the services' clients
 * do.
 */
final class Wire implements ClientHttpRequestInterceptor {

    /** A body size and the call ({@code METHOD /path}). */
    record Largest(long bytes, String call) {}

    static final int RETRIES = 5;

    private final AtomicReference<Largest> request = new AtomicReference<>();
    private final AtomicLong retries = new AtomicLong();

    long retries() {
        return retries.get();
    }

    private final AtomicReference<Largest> response = new AtomicReference<>();

    Largest largestRequest() {
        return request.get();
    }

    Largest largestResponse() {
        return response.get();
    }

    @Override
    public ClientHttpResponse intercept(
            HttpRequest call, byte[] body, ClientHttpRequestExecution execution)
            throws IOException {
        String what = call.getMethod() + " " + call.getURI().getPath();
        note(request, body.length, what);
        ClientHttpResponse answer = execution.execute(call, body);
        // As the services' clients do: a 503 with Retry-After (overload, a Redis hiccup) is
        // tried again after the pause it asks for, a few times; each retry is counted.
        for (int attempt = 1;
                attempt <= RETRIES && answer.getStatusCode().value() == 503;
                attempt++) {
            String after = answer.getHeaders().getFirst("Retry-After");
            if (after == null) {
                break;
            }
            answer.close();
            retries.incrementAndGet();
            long pause = 1000;
            try {
                pause = Math.min(2000, 1000 * Long.parseLong(after.trim()));
            } catch (NumberFormatException e) {
                // an HTTP date: wait the default second
            }
            try {
                Thread.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            note(request, body.length, what);
            answer = execution.execute(call, body);
        }
        return new CountedResponse(answer, n -> note(response, n, what));
    }

    private static void note(AtomicReference<Largest> largest, long bytes, String what) {
        largest.accumulateAndGet(
                new Largest(bytes, what), (a, b) -> a == null || b.bytes() > a.bytes() ? b : a);
    }

    /** A response whose body counts the bytes read from it and reports them once, on close. */
    private static final class CountedResponse extends WrappedResponse {
        private final LongConsumer onClose;
        private final AtomicLong read = new AtomicLong();
        private boolean reported;

        CountedResponse(ClientHttpResponse delegate, LongConsumer onClose) {
            super(delegate);
            this.onClose = onClose;
        }

        @Override
        protected InputStream wrap(InputStream body) {
            return new FilterInputStream(body) {
                @Override
                public int read() throws IOException {
                    int b = super.read();
                    if (b >= 0) {
                        read.incrementAndGet();
                    }
                    return b;
                }

                @Override
                public int read(byte[] buffer, int offset, int length) throws IOException {
                    int n = super.read(buffer, offset, length);
                    if (n > 0) {
                        read.addAndGet(n);
                    }
                    return n;
                }
            };
        }

        @Override
        public void close() {
            if (!reported) {
                reported = true;
                onClose.accept(read.get());
            }
            super.close();
        }
    }
}
