package io.weightrelay.reshard.mooncake;

/**
 * What one side holds that the other's contract cannot say: names the #3187 field, the value, and
 * why (a scalar tensor has no #3187 {@code global_shape}, an empty box no {@code local_shape}).
 */
public final class Inexpressible extends IllegalArgumentException {
    private final String field;
    private final String value;

    public Inexpressible(String field, String value, String why) {
        super("#3187 " + field + " = " + value + ": " + why);
        this.field = field;
        this.value = value;
    }

    /** The #3187 field, as its JSON names it ({@code tensors[3].global_shape}). */
    public String field() {
        return field;
    }

    /** The value that field would have had. */
    public String value() {
        return value;
    }
}
