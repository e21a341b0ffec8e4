package io.weightrelay.service.web;

import io.weightrelay.service.problem.CommonProblems;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.GZIPInputStream;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Holds every request body whose size its headers do not tell to {@code
 * relay.limits.max-request-bytes} as it is read (413 {@code payload-too-large} past it): chunked
 * bodies, and bodies sent with {@code Content-Encoding: gzip}, which it inflates (a Kimi-K2
 * manifest is 10 MB of JSON and 1 MB on the wire). {@link RequestLimits} charges a gzip body {@link
 * #INFLATION} times its wire size (at most the per-request limit) against the in-flight budget.
 */
public class BoundedRequestBodies extends OncePerRequestFilter {

    /** What a compressed JSON body is assumed to inflate to, times its wire size. */
    static final long INFLATION = 16;

    static final String GZIPPED = BoundedRequestBodies.class.getName() + ".gzipped";

    private final RequestLimitProperties properties;

    public BoundedRequestBodies(RequestLimitProperties properties) {
        this.properties = properties;
    }

    @Override
    protected void doFilterInternal(
            HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String encoding = request.getHeader("Content-Encoding");
        boolean gzip = encoding != null && encoding.trim().equalsIgnoreCase("gzip");
        boolean unsized =
                request.getContentLengthLong() < 0
                        && request.getHeader("Transfer-Encoding") != null;
        if (!gzip && !unsized) {
            chain.doFilter(request, response);
            return;
        }
        if (gzip) {
            request.setAttribute(GZIPPED, Boolean.TRUE);
        }
        long limit = properties.maxRequestBytes();
        chain.doFilter(
                new HttpServletRequestWrapper(request) {
                    private ServletInputStream body;

                    @Override
                    public ServletInputStream getInputStream() throws IOException {
                        if (body == null) {
                            body = bounded(super.getInputStream(), gzip, limit);
                        }
                        return body;
                    }

                    @Override
                    public String getHeader(String name) {
                        return gzip && "Content-Encoding".equalsIgnoreCase(name)
                                ? null
                                : super.getHeader(name);
                    }
                },
                response);
    }

    private static ServletInputStream bounded(ServletInputStream raw, boolean gzip, long limit)
            throws IOException {
        InputStream in = gzip ? new GZIPInputStream(raw, 64 * 1024) : raw;
        return new ServletInputStream() {
            private long read;
            private boolean finished;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] buffer, int offset, int length) throws IOException {
                int n = in.read(buffer, offset, length);
                if (n < 0) {
                    finished = true;
                    return n;
                }
                read += n;
                if (read > limit) {
                    throw CommonProblems.PAYLOAD_TOO_LARGE
                            .exception(
                                    (gzip ? "gzip request body inflates" : "request body runs")
                                            + " past the limit of "
                                            + limit
                                            + " bytes (relay.limits.max-request-bytes)")
                            .with("limit", limit);
                }
                return n;
            }

            @Override
            public boolean isFinished() {
                return finished;
            }

            @Override
            public boolean isReady() {
                return true;
            }

            @Override
            public void setReadListener(ReadListener listener) {
                throw new UnsupportedOperationException("blocking reads only");
            }

            @Override
            public void close() throws IOException {
                in.close();
            }
        };
    }
}
