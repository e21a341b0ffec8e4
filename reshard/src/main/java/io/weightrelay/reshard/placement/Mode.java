package io.weightrelay.reshard.placement;

/** How a worker consumes a generation. */
public enum Mode {
    /** Every tensor whole, in a safetensors image the engine's existing loader reads. */
    COMPAT,
    /** Only the bytes of the worker's own parameter shards, written in place. */
    DIRECT;

    public static Mode parse(String text) {
        return switch (text.toLowerCase(java.util.Locale.ROOT)) {
            case "compat", "compatibility" -> COMPAT;
            case "direct", "parameter-direct" -> DIRECT;
            default -> throw new IllegalArgumentException("unknown mode " + text);
        };
    }
}
