package io.weightrelay.dataplane;

/**
 * The owner engine of a segment refused: the tcp handshake failed (no secret, another deployment's
 * secret) or the role of this engine may not do what it asked (allocate in a segment it does not
 * own, free there without being a remover). {@link #subject()} is the segment or key refused.
 */
public final class PermissionDeniedException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    /** What to check, appended to the engine's message. */
    static final String HINT =
            " (check that every engine has the same DataplaneConfig.secret; only a segment's owner"
                    + " allocates, only it or a remover frees)";

    public PermissionDeniedException(String subject, String message) {
        super(DataplaneError.DENIED, subject, message);
    }
}
