package io.weightrelay.service.security;

import java.util.EnumSet;
import java.util.Set;

/**
 * What a request needs: nothing (anonymous), or a token of one of {@link #roles()}. A rule with no
 * role at all denies every token. When the request is about one identity ({@link #subject()}, of
 * the kind {@link #subjectKind()}, e.g. the instance in {@code /loaders/{instance}}), a token bound
 * to another identity is refused.
 */
public record Access(boolean isAnonymous, Set<Role> roles, String subjectKind, String subject) {

    private static final Access ANONYMOUS = new Access(true, Set.of());

    public Access {
        roles = roles.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(roles));
    }

    public Access(boolean isAnonymous, Set<Role> roles) {
        this(isAnonymous, roles, null, null);
    }

    public static Access anonymous() {
        return ANONYMOUS;
    }

    public static Access roles(Role first, Role... more) {
        return new Access(false, EnumSet.of(first, more));
    }

    /** The same access, about {@code subject} (of kind {@code kind}). */
    public Access about(String kind, String subject) {
        return new Access(isAnonymous, roles, kind, subject);
    }

    public boolean allows(Role role) {
        return isAnonymous || roles.contains(role);
    }
}
