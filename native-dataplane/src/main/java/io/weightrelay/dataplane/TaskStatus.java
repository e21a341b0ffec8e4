package io.weightrelay.dataplane;

/**
 * The state of one task of a {@link TransferBatch}.
 *
 * @param index position of the task in the submitted list
 * @param state pending, completed (every byte moved) or failed
 * @param bytesTransferred bytes moved so far
 * @param error the failure, or null unless {@code state == FAILED}
 */
public record TaskStatus(int index, State state, long bytesTransferred, DataplaneError error) {

    /** Task life cycle. */
    public enum State {
        PENDING,
        COMPLETED,
        FAILED
    }
}
