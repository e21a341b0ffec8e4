package io.weightrelay.publisher.publish;

import io.weightrelay.api.publisher.model.PublishState;
import io.weightrelay.api.publisher.model.PublishStatus;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * This node's part of one generation: its layout, which fragments are stored, the byte counters and
 * whether it is open, finished or failed. Thread safe (this object's monitor); the heavy work of a
 * batch happens outside it.
 */
final class GenerationState {

    private final GenerationLayout layout;
    private final Set<String> claimed = new HashSet<>();
    private final List<String> stored = new ArrayList<>();
    private PublishState state = PublishState.OPEN;
    private String failure;
    private int inFlight;
    private long tensors;
    private long objects;
    private long bytesStaged;
    private long bytesConverted;
    private long bytesStoredLocal;
    private long bytesStoredRemote;
    private long objectsRegistered;

    GenerationState(GenerationLayout layout) {
        this.layout = layout;
    }

    GenerationLayout layout() {
        return layout;
    }

    /** Starts a batch: the generation must be open and none of its fragments claimed before. */
    synchronized void begin(Collection<String> keys) {
        requireOpen();
        for (String key : keys) {
            if (claimed.contains(key)) {
                throw PublishProblems.ALREADY_STORED
                        .exception("fragment '" + key + "' was handed over by an earlier batch")
                        .with("key", key);
            }
        }
        claimed.addAll(keys);
        inFlight++;
    }

    /** Ends a batch, successful or not. */
    synchronized void end() {
        inFlight--;
    }

    synchronized boolean isFailed() {
        return state == PublishState.FAILED;
    }

    synchronized void requireOpen() {
        if (state == PublishState.FAILED) {
            throw PublishProblems.GENERATION_FAILED
                    .exception(
                            "generation "
                                    + layout.generation()
                                    + " failed on this node: "
                                    + failure
                                    + "; abort it")
                    .with("failure", failure);
        }
        if (state == PublishState.FINISHED) {
            throw PublishProblems.GENERATION_FINISHED.exception(
                    "generation " + layout.generation() + " is finished on this node");
        }
    }

    /**
     * Records keys a batch stored. If the generation failed meanwhile (another batch), the keys are
     * not kept: the caller removes them, since a failed generation's cleanup already ran.
     *
     * @return whether the keys were recorded
     */
    synchronized boolean stored(List<String> keys) {
        if (state == PublishState.FAILED) {
            return false;
        }
        stored.addAll(keys);
        return true;
    }

    synchronized void counted(BatchTotals totals) {
        tensors += totals.tensors();
        objects += totals.objects();
        bytesStaged += totals.bytesStaged();
        bytesConverted += totals.bytesConverted();
        bytesStoredLocal += totals.bytesStoredLocal();
        bytesStoredRemote += totals.bytesStoredRemote();
        objectsRegistered += totals.objects();
    }

    /**
     * Marks the generation failed (the first failure is kept) and hands back every key stored for
     * it so the caller removes them: a failed generation is never committed.
     */
    synchronized List<String> fail(String reason) {
        if (state != PublishState.FAILED) {
            state = PublishState.FAILED;
            failure = reason;
        }
        List<String> keys = List.copyOf(stored);
        stored.clear();
        return keys;
    }

    synchronized PublishStatus finish() {
        if (state == PublishState.OPEN && inFlight > 0) {
            throw PublishProblems.BATCHES_IN_FLIGHT.exception(
                    inFlight + " batch(es) of this generation are still being handed over");
        }
        if (state == PublishState.FAILED) {
            requireOpen();
        }
        state = PublishState.FINISHED;
        return status();
    }

    synchronized boolean isSettled() {
        return state != PublishState.OPEN && inFlight == 0;
    }

    /** No batch is being handed over right now. */
    synchronized boolean isIdle() {
        return inFlight == 0;
    }

    synchronized PublishStatus status() {
        PublishStatus status =
                new PublishStatus(
                        layout.model(),
                        layout.generation(),
                        state,
                        tensors,
                        objects,
                        bytesStaged,
                        bytesConverted,
                        bytesStoredLocal,
                        bytesStoredRemote,
                        objectsRegistered);
        return failure == null ? status : status.failure(failure);
    }

    /** What one batch added. */
    record BatchTotals(
            int tensors,
            int objects,
            long bytesStaged,
            long bytesConverted,
            long bytesStoredLocal,
            long bytesStoredRemote) {}
}
