package io.weightrelay.control.registry;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/** The stable problem types of the registry (statuses and titles: {@link ProblemCatalog}). */
public enum RegistryProblems implements ProblemKind.Catalogued {
    SEGMENT_NOT_FOUND,
    LOADER_NOT_FOUND,
    INVALID_PLACEMENT,
    /** A registration names a fragment template nobody stored (409). */
    PLACEMENT_TEMPLATE_NOT_FOUND,
    /** A read of a fragment template nobody stored (404). */
    PLACEMENT_TEMPLATE_UNKNOWN,
    PLACEMENT_DIGEST_MISMATCH,
    // What registration refuses without the manifest (the plan checks these again).
    PLACEMENT_RANK_MISMATCH,
    PLACEMENT_BAD_STRIDES,
    PLACEMENT_OUTSIDE_BUFFER,
    PLACEMENT_OVERLAP,
    // What the plan refuses: the placement disagrees with the generation's manifest.
    PLACEMENT_UNKNOWN_TENSOR,
    PLACEMENT_TENSOR_RANK_MISMATCH,
    PLACEMENT_OUTSIDE_TENSOR,
    PLACEMENT_DTYPE_MISMATCH,
    PLACEMENT_IMAGE_TOO_LARGE,
    /**
     * A loader of a rollout instance that spans nodes disagrees with the instance's other live
     * loaders: another node count, a node another loader already serves, or more loaders than
     * nodes.
     */
    ROLLOUT_INSTANCE_CONFLICT,
    /**
     * A loader names another data-plane engine than control-api runs, or than a live loader of its
     * model and group named: the plan would send bytes between engines that cannot reach each
     * other's segments.
     */
    DATAPLANE_ENGINE_MISMATCH
}
