package io.weightrelay.trainer.client;

/**
 * A generation could not be published and was aborted (or the abort itself failed, which the
 * message says); the previous generation stays active.
 */
public class PublishFailedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final long generation;

    public PublishFailedException(long generation, String message, Throwable cause) {
        super(message, cause);
        this.generation = generation;
    }

    public long generation() {
        return generation;
    }
}
