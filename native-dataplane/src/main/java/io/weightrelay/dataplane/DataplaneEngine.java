package io.weightrelay.dataplane;

/**
 * Which engine {@link Dataplane#open} starts ({@code relay.dataplane.engine} in the services): the
 * built-in C++ engine, or the real Mooncake Store and Transfer Engine driven through a Mooncake
 * agent ({@link DataplaneConfig#mooncake()} says how to run it).
 */
public enum DataplaneEngine {
    BUILTIN,
    MOONCAKE;

    /** The lower-case name the services' property uses ({@code builtin}, {@code mooncake}). */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * The engine a property value names, case-insensitively.
     *
     * @throws IllegalArgumentException naming the value and the accepted ones
     */
    public static DataplaneEngine fromLabel(String value) {
        for (DataplaneEngine e : values()) {
            if (e.label().equalsIgnoreCase(value.trim())) {
                return e;
            }
        }
        throw new IllegalArgumentException(
                "no data-plane engine '" + value + "': builtin or mooncake");
    }
}
