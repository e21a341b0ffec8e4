package io.weightrelay.service.concurrent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/** A joined future answers as the computation would have: its result or its own exception. */
class FutureResultsTest {

    @Test
    void theResultOrTheComputationsOwnUncheckedFailure() {
        assertThat(FutureResults.join(CompletableFuture.completedFuture("done"))).isEqualTo("done");

        IllegalStateException problem = new IllegalStateException("refused");
        assertThatThrownBy(() -> FutureResults.join(CompletableFuture.failedFuture(problem)))
                .isSameAs(problem);
        AssertionError error = new AssertionError("broken");
        assertThatThrownBy(() -> FutureResults.join(CompletableFuture.failedFuture(error)))
                .isSameAs(error);
    }

    @Test
    void aCheckedFailureStaysWrapped() {
        IOException io = new IOException("disk");
        assertThatThrownBy(() -> FutureResults.join(CompletableFuture.failedFuture(io)))
                .isInstanceOf(CompletionException.class)
                .hasCause(io);
    }
}
