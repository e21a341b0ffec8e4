package io.weightrelay.reshard.manifest;

import java.util.Arrays;
import java.util.List;

/**
 * Element types: the one table of the project's dtypes, each with its safetensors name, its width
 * and, for the types the REST contracts carry, its wire name there ({@code fp32}, {@code bf16},
 * ...). Every service and client maps dtypes through this table.
 */
public enum DType {
    F64(8),
    F32(4),
    BF16(2),
    F16(2),
    F8_E4M3(1),
    F8_E5M2(1),
    I64(8),
    I32(4),
    I8(1),
    U8(1);

    private final int bytes;

    DType(int bytes) {
        this.bytes = bytes;
    }

    /** The safetensors header's name of this type: each constant is named after it. */
    public String safetensorsName() {
        return name();
    }

    public int bytes() {
        return bytes;
    }

    /** The contracts' name of this type ({@code bf16}, ...); none for a type they do not carry. */
    public String wireName() {
        String wireName = wireNameOrNull();
        if (wireName == null) {
            throw new IllegalArgumentException(this + " has no contract name");
        }
        return wireName;
    }

    /** The types the REST contracts carry, in table order. */
    public static List<DType> onTheWire() {
        return Arrays.stream(values()).filter(t -> t.wireNameOrNull() != null).toList();
    }

    /** The type the contracts name {@code wireName} ({@code fp32}, {@code bf16}, ...). */
    public static DType ofWireName(String wireName) {
        return onTheWire().stream()
                .filter(type -> type.wireNameOrNull().equals(wireName))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown dtype " + wireName));
    }

    private String wireNameOrNull() {
        return switch (this) {
            case F32 -> "fp32";
            case BF16 -> "bf16";
            case F16 -> "fp16";
            case F8_E4M3 -> "fp8_e4m3";
            case I8 -> "int8";
            case I32 -> "int32";
            case I64 -> "int64";
            default -> null;
        };
    }

    /** The type a safetensors header (or this enum, in any case) names {@code name}. */
    public static DType parse(String name) {
        for (DType type : values()) {
            if (type.name().equalsIgnoreCase(name)) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown dtype " + name);
    }
}
