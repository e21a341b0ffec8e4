package io.weightrelay.reshard.plan;

/**
 * The inputs cannot be planned: a target names an unknown tensor, expects another dtype or shape,
 * asks for bytes outside a tensor, or sits on a node the topology does not have. The message names
 * the tensor or worker at fault.
 */
public final class PlanningException extends RuntimeException {
    public PlanningException(String message) {
        super(message);
    }

    /** "worker W: problem". */
    static PlanningException ofWorker(String worker, String problem) {
        return new PlanningException("worker " + worker + ": " + problem);
    }

    /** "tensor T: worker W problem". */
    static PlanningException ofTarget(String tensor, String worker, String problem) {
        return new PlanningException("tensor " + tensor + ": worker " + worker + " " + problem);
    }
}
