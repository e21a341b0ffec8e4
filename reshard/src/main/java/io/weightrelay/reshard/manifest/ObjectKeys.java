package io.weightrelay.reshard.manifest;

/** Store keys of the form {@code {model}/{generation}/{fragment}}. */
public final class ObjectKeys {
    private ObjectKeys() {}

    /**
     * The generation is deliberately not part of manifests or plans: the plan is reused every
     * generation until a digest changes, and the loader adds the generation when it reads.
     */
    public static String key(String model, long generation, String fragment) {
        if (generation < 0) {
            throw new IllegalArgumentException("negative generation " + generation);
        }
        return model + "/" + generation + "/" + fragment;
    }
}
