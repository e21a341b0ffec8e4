package io.weightrelay.loader.pipeline;

/**
 * Called once every sender reported SENT, before this loader proves what landed in its workers'
 * buffers; the lab uses it to change a received byte there ({@link FlippedReceives}), as a link, a
 * late write or bad memory would.
 */
@FunctionalInterface
public interface LandedFault {
    LandedFault NONE = (slice, bytes) -> {};

    /**
     * @param slice this loader's schedule (what its workers receive)
     * @param bytes its workers' buffers, run by run, writable
     */
    void beforeProof(SliceSchedule slice, LandedProof.Bytes bytes);
}
