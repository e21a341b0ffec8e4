package io.weightrelay.control.redis;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;
import java.util.zip.Inflater;

/**
 * Raw deflate of binary encodings (plans, slices, manifests) before they go to Redis: they repeat
 * names and strides a lot.
 */
public final class Compression {

    private Compression() {}

    public static byte[] deflate(byte[] data) {
        Deflater deflater = new Deflater(Deflater.BEST_SPEED);
        try {
            deflater.setInput(data);
            deflater.finish();
            ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, data.length / 4));
            byte[] buffer = new byte[64 * 1024];
            while (!deflater.finished()) {
                out.write(buffer, 0, deflater.deflate(buffer));
            }
            return out.toByteArray();
        } finally {
            deflater.end();
        }
    }

    /**
     * The gzip member (RFC 1952) of {@code data}, fastest level: what an HTTP body goes out as with
     * {@code Content-Encoding: gzip}.
     */
    public static byte[] gzip(byte[] data) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, data.length / 8));
        try (GZIPOutputStream gzip =
                new GZIPOutputStream(out, 64 * 1024) {
                    {
                        def.setLevel(Deflater.BEST_SPEED);
                    }
                }) {
            gzip.write(data);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return out.toByteArray();
    }

    public static byte[] inflate(byte[] data) {
        Inflater inflater = new Inflater();
        try {
            inflater.setInput(data);
            ByteArrayOutputStream out = new ByteArrayOutputStream(data.length * 4);
            byte[] buffer = new byte[64 * 1024];
            while (!inflater.finished()) {
                int n = inflater.inflate(buffer);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new IllegalStateException("truncated encoding in Redis");
                }
                out.write(buffer, 0, n);
            }
            return out.toByteArray();
        } catch (DataFormatException ex) {
            throw new IllegalStateException("corrupt encoding in Redis", ex);
        } finally {
            inflater.end();
        }
    }
}
