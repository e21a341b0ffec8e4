package io.weightrelay.control.web;

import jakarta.servlet.http.HttpServletRequest;
import java.util.Enumeration;
import java.util.function.Supplier;
import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.Resource;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;

/**
 * Binary encodings (manifests, plans, slices) as response bodies: gzip-compressed, as compressed
 * once and kept, to a caller whose {@code Accept-Encoding} allows it, the identity bytes otherwise.
 */
public final class EncodedBodies {

    private EncodedBodies() {}

    /** The identity bytes, {@code application/octet-stream}. */
    public static ResponseEntity<Resource> binary(byte[] body) {
        return ResponseEntity.ok()
                .contentType(MediaType.APPLICATION_OCTET_STREAM)
                .contentLength(body.length)
                .body(new ByteArrayResource(body));
    }

    /**
     * {@code gzipped} with {@code Content-Encoding: gzip} when {@code request} accepts gzip, else
     * {@code identity}; either varies by {@code Accept-Encoding}.
     */
    public static ResponseEntity<Resource> negotiated(
            HttpServletRequest request, Supplier<byte[]> gzipped, Supplier<byte[]> identity) {
        boolean gzip = acceptsGzip(request.getHeaders(HttpHeaders.ACCEPT_ENCODING));
        byte[] body = gzip ? gzipped.get() : identity.get();
        ResponseEntity.BodyBuilder out =
                ResponseEntity.ok()
                        .contentType(MediaType.APPLICATION_OCTET_STREAM)
                        .header(HttpHeaders.VARY, HttpHeaders.ACCEPT_ENCODING)
                        .contentLength(body.length);
        if (gzip) {
            out.header(HttpHeaders.CONTENT_ENCODING, "gzip");
        }
        return out.body(new ByteArrayResource(body));
    }

    /** Whether an {@code Accept-Encoding} lists gzip with a weight above zero (RFC 9110 12.5.3). */
    public static boolean acceptsGzip(Enumeration<String> headers) {
        if (headers == null) {
            return false;
        }
        while (headers.hasMoreElements()) {
            for (String coding : headers.nextElement().split(",")) {
                String[] parts = coding.split(";");
                String name = parts[0].trim();
                if (!name.equalsIgnoreCase("gzip") && !name.equalsIgnoreCase("x-gzip")) {
                    continue;
                }
                double weight = 1;
                for (int i = 1; i < parts.length; i++) {
                    String p = parts[i].trim();
                    if (p.startsWith("q=") || p.startsWith("Q=")) {
                        try {
                            weight = Double.parseDouble(p.substring(2).trim());
                        } catch (NumberFormatException ex) {
                            weight = 0;
                        }
                    }
                }
                return weight > 0;
            }
        }
        return false;
    }
}
