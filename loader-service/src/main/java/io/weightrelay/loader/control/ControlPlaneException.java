package io.weightrelay.loader.control;

import io.weightrelay.api.RemoteCallException;
import io.weightrelay.api.RemoteProblem;

/** control-api answered with an error, or could not be reached or understood. */
public final class ControlPlaneException extends RemoteCallException {

    private static final long serialVersionUID = 1L;

    /** control-api was not reached, or what it sent could not be decoded. */
    public ControlPlaneException(String message, Throwable cause) {
        this(message, null, cause);
    }

    /**
     * @param answer control-api's error answer, or null when none came
     */
    public ControlPlaneException(String message, RemoteProblem answer, Throwable cause) {
        super(message, answer, cause);
    }

    /**
     * Whether control-api refused the request itself (400, 409, 422: the caller's input is wrong
     * and retrying cannot help), as opposed to being unreachable, failing or refusing the loader's
     * credentials.
     */
    public boolean refusedInput() {
        String type = problemType();
        int status = status();
        return type != null
                && type.matches("[a-z0-9]+(-[a-z0-9]+)*")
                && (status == 400 || status == 409 || status == 422);
    }
}
