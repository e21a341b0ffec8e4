package io.weightrelay.loader.pipeline;

/** Called by the executor before it pushes each batch; the lab uses it to inject failures. */
@FunctionalInterface
public interface BatchHook {
    BatchHook NONE = batch -> {};

    /** Throw to fail the apply at this point. */
    void beforePush(int batch);
}
