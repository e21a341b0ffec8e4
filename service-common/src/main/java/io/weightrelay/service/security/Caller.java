package io.weightrelay.service.security;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Objects;
import java.util.Optional;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;

/**
 * Who is calling: the role of the presented token and, for a bound token, the one identity it may
 * act for (a segment owner's segment, a loader's instance). Unbound tokens have no identity and may
 * act for any.
 *
 * @param role the token's role
 * @param identity the identity the token is bound to, or null
 */
public record Caller(Role role, String identity) {

    /** Request attribute holding the authenticated caller. */
    public static final String ATTRIBUTE = Caller.class.getName();

    public Caller {
        Objects.requireNonNull(role, "role");
    }

    public static Caller unbound(Role role) {
        return new Caller(role, null);
    }

    /** Whether this caller may act for {@code target} (always, unless bound to another one). */
    public boolean mayActFor(String target) {
        return identity == null || identity.equals(target);
    }

    /** The caller of the current request, if a token was presented (or security is off). */
    public static Optional<Caller> current() {
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        if (attributes == null) {
            return Optional.empty();
        }
        Object caller = attributes.getAttribute(ATTRIBUTE, RequestAttributes.SCOPE_REQUEST);
        return caller instanceof Caller c ? Optional.of(c) : Optional.empty();
    }

    /** The caller of {@code request}, if any. */
    public static Optional<Caller> of(HttpServletRequest request) {
        return request.getAttribute(ATTRIBUTE) instanceof Caller c
                ? Optional.of(c)
                : Optional.empty();
    }

    /**
     * Refuses (403 {@code identity-mismatch}, naming both) a call about {@code target} by a caller
     * bound to another identity; {@code what} names the kind of identity, e.g. {@code instance}.
     */
    public static void requireMayActFor(String what, String target) {
        current().ifPresent(caller -> caller.check(what, target));
    }

    /** Throws the 403 problem when this caller may not act for {@code target}. */
    public void check(String what, String target) {
        if (!mayActFor(target)) {
            throw mismatch(what, target);
        }
    }

    RelayException mismatch(String what, String target) {
        return new RelayException(
                        CommonProblems.IDENTITY_MISMATCH,
                        "the "
                                + role.configName()
                                + " token is bound to "
                                + what
                                + " '"
                                + identity
                                + "' and may not act for "
                                + what
                                + " '"
                                + target
                                + "'")
                .with("role", role.configName())
                .with("boundTo", identity)
                .with("requested", target);
    }
}
