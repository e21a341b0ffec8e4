package io.weightrelay.control.generation;

import io.weightrelay.api.common.model.Topology;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;

/** A generation as stored, with what other features need beyond the REST view. */
public record StoredGeneration(Generation view, String manifestDigest, Topology trainers) {
    public long id() {
        return view.getGeneration();
    }

    public GenerationState state() {
        return view.getState();
    }

    public boolean committed() {
        return state() == GenerationState.ACTIVE || state() == GenerationState.RETIRED;
    }

    /**
     * Refuses a generation whose bytes are gone (LOST): nothing may be planned, loaded or saved
     * from it.
     */
    public StoredGeneration requireNotLost() {
        if (state() == GenerationState.LOST) {
            throw GenerationProblems.GENERATION_LOST
                    .exception(
                            "generation "
                                    + id()
                                    + " of "
                                    + view.getModel()
                                    + " is LOST: "
                                    + view.getLostReason())
                    .with("generation", id());
        }
        return this;
    }
}
