package io.weightrelay.reshard.manifest;

import java.util.Arrays;
import java.util.List;

/**
 * Element types: the one table of the project's dtypes, each with its safetensors name, its width
 * and, for the types the REST contracts carry, its wire name there ({@code fp32}, {@code bf16},
 * ...). Every service and client maps dtypes through this table.
 */
public enum DType {
    F64("F64", 8, null),
    F32("F32", 4, "fp32"),
    BF16("BF16", 2, "bf16"),
    F16("F16", 2, "fp16"),
    F8_E4M3("F8_E4M3", 1, "fp8_e4m3"),
    F8_E5M2("F8_E5M2", 1, null),
    I64("I64", 8, "int64"),
    I32("I32", 4, "int32"),
    I8("I8", 1, "int8"),
    U8("U8", 1, null);

    private final String safetensorsName;
    private final int bytes;
    private final String wireName;

    DType(String safetensorsName, int bytes, String wireName) {
        this.safetensorsName = safetensorsName;
        this.bytes = bytes;
        this.wireName = wireName;
    }

    public String safetensorsName() {
        return safetensorsName;
    }

    public int bytes() {
        return bytes;
    }

    /** The contracts' name of this type ({@code bf16}, ...); none for a type they do not carry. */
    public String wireName() {
        if (wireName == null) {
            throw new IllegalArgumentException(this + " has no contract name");
        }
        return wireName;
    }

    /** The types the REST contracts carry, in table order. */
    public static List<DType> onTheWire() {
        return Arrays.stream(values()).filter(t -> t.wireName != null).toList();
    }

    /** The type the contracts name {@code wireName} ({@code fp32}, {@code bf16}, ...). */
    public static DType ofWireName(String wireName) {
        for (DType type : values()) {
            if (type.wireName != null && type.wireName.equals(wireName)) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown dtype " + wireName);
    }

    public static DType parse(String name) {
        for (DType type : values()) {
            if (type.safetensorsName.equalsIgnoreCase(name) || type.name().equalsIgnoreCase(name)) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown dtype " + name);
    }
}
