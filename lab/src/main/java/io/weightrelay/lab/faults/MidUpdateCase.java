package io.weightrelay.lab.faults;

/**
 * A case on the suite's shared lab that injects its fault while an update runs ({@link MidUpdate})
 * and proves what the system did with a {@link Ledger}; a failed proof leaves the lab dumped and
 * discarded ({@link SharedLab#prove}).
 */
abstract class MidUpdateCase implements FaultCase {

    private final String name;

    MidUpdateCase(String name) {
        this.name = name;
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final boolean claimsMidUpdate() {
        return true;
    }

    @Override
    public FaultResult run(FaultContext context) throws Exception {
        return SharedLab.prove(context, shape(), this::prove);
    }

    /** The shared lab the case injects its fault into. */
    SharedLab.Shape shape() {
        return SharedLab.Shape.COMPAT_PAIR;
    }

    /** Injects the fault during an update of {@code b}'s lab and proves the outcome. */
    abstract FaultResult prove(SharedLab.Borrowed b, long started) throws Exception;
}
