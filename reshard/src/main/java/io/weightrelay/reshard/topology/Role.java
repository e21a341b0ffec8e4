package io.weightrelay.reshard.topology;

/** What runs on a node. */
public enum Role {
    TRAINER,
    ROLLOUT
}
