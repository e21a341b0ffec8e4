package io.weightrelay.service.concurrent;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Waiting for a computation another thread runs (a shared cache entry, a call already on its way)
 * as if the caller had run it: its own exception comes out, not the {@link CompletionException}
 * around it, so a problem it raises still reaches the handler with its type.
 */
public final class FutureResults {
    private FutureResults() {}

    /**
     * The result of {@code future}, or the {@link RuntimeException} or {@link Error} it failed
     * with; a checked cause stays wrapped in its {@link CompletionException}.
     */
    public static <T> T join(CompletableFuture<T> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw e;
        }
    }
}
