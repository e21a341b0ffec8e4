package io.weightrelay.reshard.manifest;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The safetensors image a compatibility-mode worker receives: an 8-byte little-endian header
 * length, the JSON header (padded with spaces to a multiple of 8), then every tensor packed in
 * manifest order in its rollout dtype. It follows from the manifest alone, so every reader knows
 * where each tensor lands in every consumer's buffer before anything moves.
 *
 * @param headerJson the JSON header, padding included
 * @param dataStart absolute offset of the first tensor byte (8 + header length)
 * @param tensorOffsets absolute offset of each tensor, indexed like the manifest's tensors
 * @param imageBytes total image size
 */
public record SafetensorsLayout(
        String headerJson, long dataStart, long[] tensorOffsets, long imageBytes) {

    public SafetensorsLayout {
        tensorOffsets = tensorOffsets.clone();
    }

    @Override
    public long[] tensorOffsets() {
        return tensorOffsets.clone();
    }

    public long tensorOffset(int tensorIndex) {
        return tensorOffsets[tensorIndex];
    }

    /** The 8-byte little-endian length prefix followed by the header, ready to write. */
    public byte[] headerBytes() {
        byte[] json = headerJson.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[8 + json.length];
        long length = json.length;
        for (int i = 0; i < 8; i++) {
            out[i] = (byte) (length >>> (8 * i));
        }
        System.arraycopy(json, 0, out, 8, json.length);
        return out;
    }

    public static SafetensorsLayout of(SourceManifest manifest) {
        List<TensorSpec> tensors = manifest.tensors();
        StringBuilder json = new StringBuilder(64 + tensors.size() * 96);
        json.append("{\"__metadata__\":{\"format\":\"pt\"}");
        long[] relative = new long[tensors.size()];
        long cursor = 0;
        for (int i = 0; i < tensors.size(); i++) {
            TensorSpec t = tensors.get(i);
            relative[i] = cursor;
            long end = cursor + t.bytes();
            json.append(',');
            appendJsonString(json, t.name());
            json.append(":{\"dtype\":\"").append(t.rolloutDtype().safetensorsName());
            json.append("\",\"shape\":").append(Arrays.toString(t.shape().dims()).replace(" ", ""));
            json.append(",\"data_offsets\":[").append(cursor).append(',').append(end).append("]}");
            cursor = end;
        }
        json.append('}');
        int utf8 = json.toString().getBytes(StandardCharsets.UTF_8).length;
        while (utf8 % 8 != 0) {
            json.append(' ');
            utf8++;
        }
        long dataStart = 8L + utf8;
        long[] absolute = new long[relative.length];
        for (int i = 0; i < relative.length; i++) {
            absolute[i] = dataStart + relative[i];
        }
        return new SafetensorsLayout(json.toString(), dataStart, absolute, dataStart + cursor);
    }

    private static void appendJsonString(StringBuilder out, String value) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof SafetensorsLayout s
                && headerJson.equals(s.headerJson)
                && dataStart == s.dataStart
                && imageBytes == s.imageBytes
                && Arrays.equals(tensorOffsets, s.tensorOffsets);
    }

    @Override
    public int hashCode() {
        return headerJson.hashCode() * 31 + Arrays.hashCode(tensorOffsets);
    }

    @Override
    public String toString() {
        return "SafetensorsLayout[tensors="
                + tensorOffsets.length
                + ", imageBytes="
                + imageBytes
                + "]";
    }
}
