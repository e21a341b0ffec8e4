package io.weightrelay.service.security;

import java.util.EnumSet;
import java.util.Set;

/**
 * What a request needs: nothing (anonymous), or a token of one of {@link #roles()}. A rule with no
 * role at all denies every token.
 */
public record Access(boolean isAnonymous, Set<Role> roles) {

    private static final Access ANONYMOUS = new Access(true, Set.of());

    public Access {
        roles = roles.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(roles));
    }

    public static Access anonymous() {
        return ANONYMOUS;
    }

    public static Access roles(Role first, Role... more) {
        return new Access(false, EnumSet.of(first, more));
    }

    public boolean allows(Role role) {
        return isAnonymous || roles.contains(role);
    }
}
