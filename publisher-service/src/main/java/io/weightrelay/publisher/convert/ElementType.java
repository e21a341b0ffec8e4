package io.weightrelay.publisher.convert;

import java.util.Locale;

/** Element types of the REST contracts ({@code fp32}, {@code bf16}, ...) and their widths. */
public enum ElementType {
    FP32(4),
    BF16(2),
    FP16(2),
    FP8_E4M3(1),
    INT8(1),
    INT32(4),
    INT64(8);

    private final int bytes;

    ElementType(int bytes) {
        this.bytes = bytes;
    }

    public int bytes() {
        return bytes;
    }

    /** The contract's name, e.g. {@code bf16}. */
    public String apiName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Parses the contract's name ({@code fp32}, {@code bf16}, ...). */
    public static ElementType ofApiName(String name) {
        for (ElementType type : values()) {
            if (type.apiName().equals(name)) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown dtype " + name);
    }
}
