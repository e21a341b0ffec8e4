package io.weightrelay.reshard.manifest;

/** Element types, named as safetensors names them. */
public enum DType {
    F64("F64", 8),
    F32("F32", 4),
    BF16("BF16", 2),
    F16("F16", 2),
    F8_E4M3("F8_E4M3", 1),
    F8_E5M2("F8_E5M2", 1),
    I64("I64", 8),
    I32("I32", 4),
    I8("I8", 1),
    U8("U8", 1);

    private final String safetensorsName;
    private final int bytes;

    DType(String safetensorsName, int bytes) {
        this.safetensorsName = safetensorsName;
        this.bytes = bytes;
    }

    public String safetensorsName() {
        return safetensorsName;
    }

    public int bytes() {
        return bytes;
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
