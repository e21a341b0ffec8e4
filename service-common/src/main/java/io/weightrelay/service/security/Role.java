package io.weightrelay.service.security;

import java.util.Locale;

/** Who is calling. A token belongs to exactly one role (and, when bound, to one identity). */
public enum Role {
    /** Trainer coordinators and publishers: open, fill, commit and abort generations. */
    TRAINER,
    /** Loaders: register, lease, fetch plans, report update phases (for their own instance). */
    LOADER,
    /** Operators and dashboards: read everything, run maintenance. */
    OPERATOR,
    /**
     * Segment owners (a publisher or storage unit acting on its own segment): register the segment
     * with its admin URL; and control-api calling an owner's admin endpoints (checkpoints).
     */
    OWNER,
    /** Metrics scrapers: {@code /actuator/prometheus} and nothing else. */
    METRICS;

    /** The name used in configuration and problem bodies, e.g. {@code trainer}. */
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
