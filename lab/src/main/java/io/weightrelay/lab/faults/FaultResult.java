package io.weightrelay.lab.faults;

/**
 * What one {@link FaultCase} proved.
 *
 * @param name the case's name
 * @param passed whether every assertion of the case held
 * @param detail what happened, in one line (the error named, the generation that stayed active)
 * @param corruptedServed engine reports of a generation whose bytes did not verify
 * @param partialServed engine reports of a generation not all of whose bytes arrived
 * @param lostCommitted committed generations no longer loadable after the fault
 * @param seconds the case's wall time
 * @param claimsMidUpdate whether the case says it injects its fault while an update runs
 * @param provedMidUpdate whether the case proved that its fault landed while the update ran
 */
public record FaultResult(
        String name,
        boolean passed,
        String detail,
        long corruptedServed,
        long partialServed,
        long lostCommitted,
        double seconds,
        boolean claimsMidUpdate,
        boolean provedMidUpdate) {

    /**
     * A case that could not run, or threw before it proved anything: failed with {@code detail},
     * counting nothing served or lost.
     */
    static FaultResult failed(
            String name, String detail, long startedNanos, boolean claimsMidUpdate) {
        double seconds = (System.nanoTime() - startedNanos) / 1e9;
        return new FaultResult(name, false, detail, 0, 0, 0, seconds, claimsMidUpdate, false);
    }
}
