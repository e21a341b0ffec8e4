package io.weightrelay.reshard.placement;

import java.util.List;
import java.util.Objects;

/**
 * One rollout worker (a GPU process) as its loader registers it.
 *
 * @param id unique worker id
 * @param instance id of the rollout engine instance (one loader each)
 * @param node node label; same-node writes use the local transport
 * @param nicFirst first NIC index on the node the worker's traffic uses
 * @param nicCount how many consecutive NICs it stripes over (at least 1)
 * @param mode compatibility or parameter-direct
 * @param segment Transfer Engine segment that holds its receive buffers
 * @param fragments parameter-direct shards; empty in compatibility mode
 */
public record Worker(
        String id,
        String instance,
        String node,
        int nicFirst,
        int nicCount,
        Mode mode,
        String segment,
        List<TargetFragment> fragments) {

    /** Buffer id of a compatibility-mode worker's safetensors image. */
    public static final String COMPAT_BUFFER = "safetensors";

    public Worker {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(instance, "instance");
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(segment, "segment");
        fragments = List.copyOf(fragments);
        if (nicFirst < 0 || nicCount < 1) {
            throw new IllegalArgumentException("worker " + id + ": bad NIC range");
        }
        if (mode == Mode.COMPAT && !fragments.isEmpty()) {
            throw new IllegalArgumentException(
                    "worker " + id + ": compatibility workers receive every tensor whole");
        }
    }

    /** The same worker registered with other fragments. */
    public Worker withFragments(List<TargetFragment> other) {
        return new Worker(id, instance, node, nicFirst, nicCount, mode, segment, other);
    }
}
