package io.weightrelay.control.registry;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** The stable problem types of the registry. */
public final class RegistryProblems {

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

    /**
     * A loader of a rollout instance that spans nodes disagrees with the instance's other live
     * loaders: another node count, a node another loader already serves, or more loaders than
     * nodes.
     */
    public static final ProblemKind ROLLOUT_INSTANCE_CONFLICT =
            new ProblemKind(
                    "rollout-instance-conflict",
                    HttpStatus.CONFLICT,
                    "A loader disagrees with the other loaders of its rollout instance");

    private RegistryProblems() {}
}
