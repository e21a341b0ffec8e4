package io.weightrelay.api;

import io.weightrelay.reshard.manifest.DType;

/** reshard's dtypes to the contracts' names ({@code fp32}, {@code bf16}, ...) and back. */
public final class Dtypes {

    private Dtypes() {}

    public static String apiName(DType type) {
        return switch (type) {
            case F32 -> "fp32";
            case BF16 -> "bf16";
            case F16 -> "fp16";
            case F8_E4M3 -> "fp8_e4m3";
            case I8 -> "int8";
            case I32 -> "int32";
            case I64 -> "int64";
            default -> throw new IllegalArgumentException(type + " has no contract name");
        };
    }

    public static DType parse(String apiName) {
        return switch (apiName) {
            case "fp32" -> DType.F32;
            case "bf16" -> DType.BF16;
            case "fp16" -> DType.F16;
            case "fp8_e4m3" -> DType.F8_E4M3;
            case "int8" -> DType.I8;
            case "int32" -> DType.I32;
            case "int64" -> DType.I64;
            default -> throw new IllegalArgumentException("unknown dtype " + apiName);
        };
    }
}
