package io.weightrelay.api;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.zip.GZIPInputStream;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;

/**
 * A binary answer as it crossed the wire, gzip-compressed or not: control-api sends a plan slice
 * (compressed once, when it computed the plan) and an encoded manifest that way to a caller that
 * accepts it. Kept compressed until {@link #inflated()}, so a caller can tell the call's time from
 * the inflating's (the lab's {@code bench control-plane} times a loader's inflating as that
 * loader's own CPU).
 *
 * @param bytes the body's bytes as they came
 * @param gzipped whether they are gzip-compressed ({@code Content-Encoding: gzip})
 */
public record EncodedBody(byte[] bytes, boolean gzipped) {

    /** The body of {@code answer}, compressed if its {@code Content-Encoding} says so. */
    public static EncodedBody of(ResponseEntity<byte[]> answer) {
        String coding = answer.getHeaders().getFirst(HttpHeaders.CONTENT_ENCODING);
        byte[] body = answer.getBody() == null ? new byte[0] : answer.getBody();
        return new EncodedBody(body, coding != null && coding.trim().equalsIgnoreCase("gzip"));
    }

    /**
     * The identity bytes.
     *
     * @throws UncheckedIOException when a gzip body does not inflate
     */
    public byte[] inflated() {
        if (!gzipped) {
            return bytes;
        }
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(bytes))) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("a gzip body that does not inflate", e);
        }
    }
}
