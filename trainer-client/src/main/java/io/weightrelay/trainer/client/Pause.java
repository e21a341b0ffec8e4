package io.weightrelay.trainer.client;

import java.time.Duration;

/** The wait between two tries of a call the service asked to repeat later. */
final class Pause {

    private Pause() {}

    /**
     * Sleeps {@code d} (at least a millisecond).
     *
     * @param reason what is waited out, for the exception when the thread is interrupted
     */
    static void sleep(Duration d, String reason) {
        try {
            Thread.sleep(Math.max(1, d.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while " + reason, e);
        }
    }
}
