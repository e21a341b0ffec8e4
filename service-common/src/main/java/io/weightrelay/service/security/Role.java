package io.weightrelay.service.security;

import java.util.Locale;

/** Who is calling. A token belongs to exactly one role. */
public enum Role {
    /** Trainer coordinators and publishers: open, fill, commit and abort generations. */
    TRAINER,
    /** Loaders: register, lease, fetch plans, report update phases. */
    LOADER,
    /** Operators and dashboards: read everything, run maintenance. */
    OPERATOR;

    /** The name used in configuration and problem bodies, e.g. {@code trainer}. */
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
