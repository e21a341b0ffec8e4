package io.weightrelay.api;

/**
 * A call to another relay service failed: the service answered with an error ({@link #problem()}
 * holds its decoded answer) or no usable answer came. Each client throws its own subclass, so a
 * caller can tell which service failed; what the failure carries is the same for all of them.
 */
public class RemoteCallException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient RemoteProblem problem;

    /**
     * @param problem the service's error answer, or null when none came
     */
    protected RemoteCallException(String message, RemoteProblem problem, Throwable cause) {
        super(message, cause);
        this.problem = problem;
    }

    /** The service's error answer, or null when none came. */
    public RemoteProblem problem() {
        return problem;
    }

    /** HTTP status of the answer, 0 when none came. */
    public int status() {
        return problem == null ? 0 : problem.status();
    }

    /**
     * The slug of the answer's problem type ({@code generation-not-found}), or null when no answer
     * came or it was not a problem.
     */
    public String problemType() {
        return problem == null ? null : problem.type();
    }

    /** The answer's problem detail, or null. */
    public String detail() {
        return problem == null ? null : problem.detail();
    }
}
