package io.weightrelay.loader.pipeline;

/**
 * Milliseconds per step of one unit of work, for its log line ({@code step=12ms next=3ms}): where a
 * prepare spends its time, cold or warm. Not thread safe: one per unit of work.
 */
public final class Laps {
    private final StringBuilder laps = new StringBuilder();
    private long last = System.nanoTime();

    /** Ends the step running since the last lap (or since construction) as {@code step}. */
    public void lap(String step) {
        long now = System.nanoTime();
        laps.append(step).append('=').append((now - last) / 1_000_000).append("ms ");
        last = now;
    }

    @Override
    public String toString() {
        return laps.toString().trim();
    }
}
