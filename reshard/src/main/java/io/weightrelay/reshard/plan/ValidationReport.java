package io.weightrelay.reshard.plan;

import java.util.List;

/**
 * Outcome of validating a plan or a slice.
 *
 * @param problems what is wrong, first problems only; empty when valid
 * @param readBytes bytes read from the store
 * @param deliveredBytes bytes landing in consumer buffers (fan-out copies included)
 * @param expectedBytes bytes the consumers' registrations hold
 */
public record ValidationReport(
        List<String> problems, long readBytes, long deliveredBytes, long expectedBytes) {
    public ValidationReport {
        problems = List.copyOf(problems);
    }

    public boolean valid() {
        return problems.isEmpty();
    }

    /** Fails closed: throws with every recorded problem when not valid. */
    public ValidationReport orThrow() {
        if (!valid()) {
            throw new PlanValidationException(String.join("; ", problems));
        }
        return this;
    }
}
