package io.weightrelay.control;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/**
 * Every problem type control-api answers with, besides the common ones ({@code CommonProblems}) and
 * Redis's ({@code RedisGuard}): its error contract in one place, grouped by feature. Each type is
 * stable; clients switch on it.
 */
public final class ControlProblems {

    // ---- generations, manifests and leases
    // -------------------------------------------------------

    public static final ProblemKind MODEL_NOT_FOUND =
            new ProblemKind("model-not-found", HttpStatus.NOT_FOUND, "Unknown model");
    public static final ProblemKind GENERATION_NOT_FOUND =
            new ProblemKind("generation-not-found", HttpStatus.NOT_FOUND, "Unknown generation");
    public static final ProblemKind NO_ACTIVE_GENERATION =
            new ProblemKind(
                    "no-active-generation", HttpStatus.NOT_FOUND, "No generation is active");
    public static final ProblemKind MODEL_MISMATCH =
            new ProblemKind("model-mismatch", HttpStatus.BAD_REQUEST, "Body names another model");
    public static final ProblemKind INVALID_MANIFEST =
            new ProblemKind("invalid-manifest", HttpStatus.BAD_REQUEST, "Invalid manifest");
    public static final ProblemKind INVALID_TOPOLOGY =
            new ProblemKind("invalid-topology", HttpStatus.BAD_REQUEST, "Invalid topology");
    public static final ProblemKind MANIFEST_TOO_LARGE =
            new ProblemKind(
                    "manifest-too-large",
                    HttpStatus.CONTENT_TOO_LARGE,
                    "Manifest has too many objects");
    public static final ProblemKind TRAINER_STEP_CONFLICT =
            new ProblemKind(
                    "trainer-step-conflict",
                    HttpStatus.CONFLICT,
                    "Trainer step already opened with another manifest");
    public static final ProblemKind GENERATION_NOT_OPEN =
            new ProblemKind("generation-not-open", HttpStatus.CONFLICT, "Generation is not open");
    public static final ProblemKind GENERATION_NOT_COMMITTED =
            new ProblemKind(
                    "generation-not-committed",
                    HttpStatus.CONFLICT,
                    "Generation was never committed");
    public static final ProblemKind UNKNOWN_OBJECT =
            new ProblemKind(
                    "unknown-object", HttpStatus.BAD_REQUEST, "Object is not in the manifest");
    public static final ProblemKind OBJECT_SIZE_MISMATCH =
            new ProblemKind(
                    "object-size-mismatch",
                    HttpStatus.BAD_REQUEST,
                    "Object size differs from the manifest");
    public static final ProblemKind OBJECT_CONFLICT =
            new ProblemKind(
                    "object-conflict",
                    HttpStatus.CONFLICT,
                    "Object already registered with another size or checksum");
    public static final ProblemKind GENERATION_INCOMPLETE =
            new ProblemKind(
                    "generation-incomplete",
                    HttpStatus.CONFLICT,
                    "Generation is missing objects or has wrong ones");
    public static final ProblemKind COMMIT_CONFLICT =
            new ProblemKind("commit-conflict", HttpStatus.CONFLICT, "Commit refused");
    public static final ProblemKind GENERATION_NOT_LEASABLE =
            new ProblemKind(
                    "generation-not-leasable",
                    HttpStatus.CONFLICT,
                    "Generation can no longer be leased");

    public static final ProblemKind GENERATION_LOST =
            new ProblemKind(
                    "generation-lost", HttpStatus.CONFLICT, "Generation's stored bytes are gone");

    // ---- registry: segment owners, loaders, placements
    // -------------------------------------------

    public static final ProblemKind SEGMENT_NOT_FOUND =
            new ProblemKind("segment-not-found", HttpStatus.NOT_FOUND, "Unknown segment");
    public static final ProblemKind LOADER_NOT_FOUND =
            new ProblemKind("loader-not-found", HttpStatus.NOT_FOUND, "Unknown loader");
    public static final ProblemKind INVALID_PLACEMENT =
            new ProblemKind(
                    "invalid-placement", HttpStatus.BAD_REQUEST, "Invalid worker placement");

    public static final ProblemKind PLACEMENT_TEMPLATE_NOT_FOUND =
            new ProblemKind(
                    "placement-template-not-found",
                    HttpStatus.CONFLICT,
                    "A worker names a fragment template that is not stored");

    /** A read of a fragment template nobody stored (a registration naming one is 409 above). */
    public static final ProblemKind PLACEMENT_TEMPLATE_UNKNOWN =
            new ProblemKind(
                    "placement-template-unknown",
                    HttpStatus.NOT_FOUND,
                    "No fragment template is stored under this digest");

    public static final ProblemKind PLACEMENT_DIGEST_MISMATCH =
            new ProblemKind(
                    "placement-digest-mismatch",
                    HttpStatus.BAD_REQUEST,
                    "A fragment template is not stored under its own digest");

    // What registration refuses without the manifest (the plan checks these again).
    public static final ProblemKind PLACEMENT_RANK_MISMATCH =
            new ProblemKind(
                    "placement-rank-mismatch",
                    HttpStatus.BAD_REQUEST,
                    "Offset, shape and strides of a box differ in rank");
    public static final ProblemKind PLACEMENT_BAD_STRIDES =
            new ProblemKind(
                    "placement-bad-strides",
                    HttpStatus.BAD_REQUEST,
                    "Strides let a box's elements overlap");
    public static final ProblemKind PLACEMENT_OUTSIDE_BUFFER =
            new ProblemKind(
                    "placement-outside-buffer",
                    HttpStatus.BAD_REQUEST,
                    "A box's bytes leave its buffer");
    public static final ProblemKind PLACEMENT_OVERLAP =
            new ProblemKind(
                    "placement-overlap",
                    HttpStatus.BAD_REQUEST,
                    "Two boxes share bytes of one buffer");

    // What the plan refuses: the placement disagrees with the generation's manifest.
    public static final ProblemKind PLACEMENT_UNKNOWN_TENSOR =
            new ProblemKind(
                    "placement-unknown-tensor",
                    HttpStatus.CONFLICT,
                    "A box names a tensor the manifest does not have");
    public static final ProblemKind PLACEMENT_TENSOR_RANK_MISMATCH =
            new ProblemKind(
                    "placement-tensor-rank-mismatch",
                    HttpStatus.CONFLICT,
                    "A box's rank differs from its tensor's");
    public static final ProblemKind PLACEMENT_OUTSIDE_TENSOR =
            new ProblemKind(
                    "placement-outside-tensor",
                    HttpStatus.CONFLICT,
                    "A box leaves its tensor's shape");
    public static final ProblemKind PLACEMENT_DTYPE_MISMATCH =
            new ProblemKind(
                    "placement-dtype-mismatch",
                    HttpStatus.CONFLICT,
                    "A box's innermost stride is not the rollout dtype's size");
    public static final ProblemKind PLACEMENT_IMAGE_TOO_LARGE =
            new ProblemKind(
                    "placement-image-too-large",
                    HttpStatus.CONFLICT,
                    "The safetensors image does not fit a compatibility worker's buffer");

    // ---- routing plans
    // ---------------------------------------------------------------------------

    public static final ProblemKind PLAN_NOT_FOUND =
            new ProblemKind("plan-not-found", HttpStatus.NOT_FOUND, "Unknown plan");
    public static final ProblemKind SLICE_NOT_FOUND =
            new ProblemKind(
                    "slice-not-found", HttpStatus.NOT_FOUND, "Loader is not part of the plan");
    public static final ProblemKind NO_LIVE_LOADERS =
            new ProblemKind(
                    "no-live-loaders", HttpStatus.CONFLICT, "No live loader in the rollout group");
    public static final ProblemKind PLAN_FAILED =
            new ProblemKind("plan-failed", HttpStatus.CONFLICT, "The planner refused the inputs");
    public static final ProblemKind PLAN_INVALID =
            new ProblemKind("plan-invalid", HttpStatus.CONFLICT, "The plan failed its validation");
    public static final ProblemKind PLAN_BUSY =
            new ProblemKind(
                    "plan-busy",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "Another instance is still computing the plan");

    // ---- update sessions
    // -------------------------------------------------------------------------

    public static final ProblemKind SESSION_NOT_FOUND =
            new ProblemKind("session-not-found", HttpStatus.NOT_FOUND, "Unknown update session");
    public static final ProblemKind SESSION_CONFLICT =
            new ProblemKind(
                    "session-conflict",
                    HttpStatus.CONFLICT,
                    "Session exists with other participants");
    public static final ProblemKind NOT_A_PARTICIPANT =
            new ProblemKind(
                    "not-a-participant", HttpStatus.CONFLICT, "Loader is not in the session");
    public static final ProblemKind EPOCH_FENCED =
            new ProblemKind(
                    "epoch-fenced",
                    HttpStatus.CONFLICT,
                    "Report from a stale or foreign loader epoch");
    public static final ProblemKind EPOCH_REQUIRED =
            new ProblemKind(
                    "epoch-required", HttpStatus.BAD_REQUEST, "Report without the loader's epoch");
    public static final ProblemKind SESSION_CLOSED =
            new ProblemKind("session-closed", HttpStatus.CONFLICT, "Session already ended");
    public static final ProblemKind PHASE_OUT_OF_ORDER =
            new ProblemKind(
                    "phase-out-of-order", HttpStatus.CONFLICT, "Phase reported out of order");

    // ---- checkpoints
    // -----------------------------------------------------------------------------

    public static final ProblemKind OBJECTS_NOT_STORED =
            new ProblemKind(
                    "objects-not-stored",
                    HttpStatus.CONFLICT,
                    "Some objects of the generation are not in the store");

    /** An owner failed or could not be reached: no completion marker was written. */
    public static final ProblemKind CHECKPOINT_FAILED =
            new ProblemKind(
                    "checkpoint-failed",
                    HttpStatus.CONFLICT,
                    "The checkpoint save failed; it has no completion marker");

    /** A restore's owners could not re-store every object: nothing was registered. */
    public static final ProblemKind RESTORE_FAILED =
            new ProblemKind(
                    "restore-failed",
                    HttpStatus.CONFLICT,
                    "The checkpoint restore failed; nothing was registered");

    /**
     * The directory holds no complete checkpoint (no marker, or a manifest it does not vouch for).
     */
    public static final ProblemKind CHECKPOINT_INCOMPLETE =
            new ProblemKind(
                    "checkpoint-incomplete",
                    HttpStatus.CONFLICT,
                    "The directory holds no complete checkpoint");

    /** No live segment owner with an admin URL to restore into. */
    public static final ProblemKind NO_OWNERS =
            new ProblemKind(
                    "no-segment-owners",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "No live segment owner can take the restored objects");

    // ---- object store
    // ----------------------------------------------------------------------------

    public static final ProblemKind STORE_UNAVAILABLE =
            new ProblemKind(
                    "store-unavailable",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "Object store unavailable");

    private ControlProblems() {}
}
