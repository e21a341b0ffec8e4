package io.weightrelay.publisher;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** Waiting for the parallel parts of a batch (conversions, puts, registrations). */
public final class Futures {
    private Futures() {}

    /** Waits for every future; the first failure is rethrown, unwrapped, once all have ended. */
    public static void joinAll(List<? extends CompletableFuture<?>> futures) {
        RuntimeException first = null;
        for (CompletableFuture<?> f : futures) {
            try {
                f.join();
            } catch (CompletionException e) {
                if (first == null) {
                    first = unwrap(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** The failure inside completion wrappers. */
    public static RuntimeException unwrap(Throwable e) {
        Throwable cause = e;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause instanceof RuntimeException r ? r : new IllegalStateException(cause);
    }
}
