package io.weightrelay.reshard.plan;

/** A plan or slice failed validation; loaders must not apply it. */
public final class PlanValidationException extends RuntimeException {
    public PlanValidationException(String message) {
        super(message);
    }
}
