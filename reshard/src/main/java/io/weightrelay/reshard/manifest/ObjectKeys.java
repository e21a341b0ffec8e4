package io.weightrelay.reshard.manifest;

/** Store keys of the form {@code {model}/{generation}/{fragment}}. */
public final class ObjectKeys {
    private ObjectKeys() {}

    /**
     * The store key of one of {@code generation}'s fragments. The generation is deliberately not
     * part of manifests or plans: the plan is reused every generation until a digest changes, and
     * the loader adds the generation when it reads.
     */
    public static String key(GenerationId generation, String fragment) {
        return generation.path() + "/" + fragment;
    }
}
