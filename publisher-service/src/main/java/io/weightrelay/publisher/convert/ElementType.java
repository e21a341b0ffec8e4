package io.weightrelay.publisher.convert;

import io.weightrelay.reshard.manifest.DType;
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

    /** The same type as reshard names it. */
    public DType dtype() {
        return switch (this) {
            case FP32 -> DType.F32;
            case BF16 -> DType.BF16;
            case FP16 -> DType.F16;
            case FP8_E4M3 -> DType.F8_E4M3;
            case INT8 -> DType.I8;
            case INT32 -> DType.I32;
            case INT64 -> DType.I64;
        };
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
