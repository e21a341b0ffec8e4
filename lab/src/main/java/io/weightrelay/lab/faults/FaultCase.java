package io.weightrelay.lab.faults;

/**
 * One fault injected into a real running lab (processes killed by signal, Redis restarted, bytes
 * flipped), and the proof of what the system did about it.
 *
 * <p>A case starts, or borrows from its {@link FaultContext}, the lab it needs, injects exactly one
 * fault, and then checks the three things every case checks: the active generation is intact, no
 * engine ever reported a generation whose bytes are not all of that generation, and the system
 * serves the next update. Each case is independent of the others and removes what it made.
 */
public interface FaultCase {

    /** A short kebab-case name, one row of {@code ./relay faults}. */
    String name();

    /**
     * Whether the case injects its fault while an update runs; such a case proves that the fault
     * landed before the update ended ({@link FaultResult#provedMidUpdate()}).
     */
    default boolean claimsMidUpdate() {
        return false;
    }

    /** Injects the fault and proves the outcome; a failed proof is a result, not an exception. */
    FaultResult run(FaultContext context) throws Exception;
}
