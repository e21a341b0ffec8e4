package io.weightrelay.service.security;

/**
 * A token bound to one identity: {@code relay.security.bound[n].role}, {@code .identity}, {@code
 * .token} (environment {@code RELAY_SECURITY_BOUND_0_ROLE}, ...). A call by it about another
 * identity (another loader's instance, another owner's segment) is refused with 403 {@code
 * identity-mismatch}.
 *
 * @param role the token's role
 * @param identity the segment (owner) or instance (loader) it may act for
 * @param token the token, at least {@link RoleTokenProperties#MIN_TOKEN_LENGTH} characters
 */
public record BoundToken(Role role, String identity, String token) {

    @Override
    public String toString() {
        return "BoundToken[role=" + role + ", identity=" + identity + ", token=<hidden>]";
    }
}
