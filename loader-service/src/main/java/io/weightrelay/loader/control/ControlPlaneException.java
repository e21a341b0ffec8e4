package io.weightrelay.loader.control;

/** control-api answered with an error, or could not be reached. */
public final class ControlPlaneException extends RuntimeException {
    private final int status;
    private final String problemType;
    private final String detail;

    public ControlPlaneException(int status, String message, Throwable cause) {
        this(status, null, null, message, cause);
    }

    /**
     * @param problemType the slug of control-api's problem type ({@code invalid-placement}), or
     *     null when the answer was not a problem
     * @param detail the problem's detail, or null
     */
    public ControlPlaneException(
            int status, String problemType, String detail, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.problemType = problemType;
        this.detail = detail;
    }

    /** HTTP status of the answer, 0 when control-api was not reached. */
    public int status() {
        return status;
    }

    /** The slug of control-api's problem type, or null. */
    public String problemType() {
        return problemType;
    }

    /** control-api's problem detail, or null. */
    public String detail() {
        return detail;
    }

    /**
     * Whether control-api refused the request itself (400, 409, 422: the caller's input is wrong
     * and retrying cannot help), as opposed to being unreachable, failing or refusing the loader's
     * credentials.
     */
    public boolean refusedInput() {
        return problemType != null
                && problemType.matches("[a-z0-9]+(-[a-z0-9]+)*")
                && (status == 400 || status == 409 || status == 422);
    }
}
