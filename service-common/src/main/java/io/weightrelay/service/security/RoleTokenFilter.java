package io.weightrelay.service.security;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.web.filter.OncePerRequestFilter;
import tools.jackson.databind.json.JsonMapper;

/**
 * Checks the bearer token of every request against the service's {@link AccessPolicy}: a missing or
 * unknown token is 401, a known token of a role the rule does not allow is 403, both as
 * problem+json with the common stable types; a token bound to one identity used for a request about
 * another is 403 {@code identity-mismatch} naming both. The caller's role is left in the request
 * attribute {@link #ROLE_ATTRIBUTE}, the {@link Caller} in {@link Caller#ATTRIBUTE}.
 */
public final class RoleTokenFilter extends OncePerRequestFilter {

    /** Request attribute holding the authenticated {@link Role}. */
    public static final String ROLE_ATTRIBUTE = RoleTokenFilter.class.getName() + ".role";

    private static final String BEARER = "Bearer ";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final AccessPolicy policy;
    private final TokenAuthenticator authenticator;
    private final boolean enabled;

    public RoleTokenFilter(AccessPolicy policy, RoleTokenProperties properties) {
        this.policy = policy;
        this.authenticator = new TokenAuthenticator(properties.tokens(), properties.bound());
        this.enabled = properties.enabled();
    }

    @Override
    protected void doFilterInternal(
            HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        if (!enabled) {
            request.setAttribute(ROLE_ATTRIBUTE, Role.OPERATOR);
            request.setAttribute(Caller.ATTRIBUTE, Caller.unbound(Role.OPERATOR));
            chain.doFilter(request, response);
            return;
        }
        Access access = policy.access(request);
        Optional<Caller> caller = bearer(request).flatMap(authenticator::caller);
        Optional<Role> role = caller.map(Caller::role);
        caller.ifPresent(
                c -> {
                    request.setAttribute(ROLE_ATTRIBUTE, c.role());
                    request.setAttribute(Caller.ATTRIBUTE, c);
                });
        if (access.isAnonymous()) {
            chain.doFilter(request, response);
            return;
        }
        if (role.isEmpty()) {
            response.setHeader(HttpHeaders.WWW_AUTHENTICATE, "Bearer");
            reject(
                    request,
                    response,
                    CommonProblems.UNAUTHORIZED,
                    "a bearer token of one of the roles " + names(access) + " is required");
            return;
        }
        if (!access.allows(role.get())) {
            reject(
                    request,
                    response,
                    CommonProblems.FORBIDDEN,
                    "role "
                            + role.get().configName()
                            + " may not "
                            + request.getMethod()
                            + " this resource; allowed: "
                            + names(access));
            return;
        }
        if (access.subject() != null && !caller.get().mayActFor(access.subject())) {
            RelayException mismatch = caller.get().mismatch(access.subjectKind(), access.subject());
            Map<String, Object> members = new LinkedHashMap<>();
            members.put("role", role.get().configName());
            members.put("boundTo", caller.get().identity());
            members.put("requested", access.subject());
            reject(
                    request,
                    response,
                    CommonProblems.IDENTITY_MISMATCH,
                    mismatch.getBody().getDetail(),
                    members);
            return;
        }
        chain.doFilter(request, response);
    }

    @Override
    protected boolean shouldNotFilterAsyncDispatch() {
        return true;
    }

    @Override
    protected boolean shouldNotFilterErrorDispatch() {
        return true;
    }

    private static Optional<String> bearer(HttpServletRequest request) {
        String header = request.getHeader(HttpHeaders.AUTHORIZATION);
        if (header == null || header.length() <= BEARER.length()) {
            return Optional.empty();
        }
        if (!header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
            return Optional.empty();
        }
        return Optional.of(header.substring(BEARER.length()).trim());
    }

    private static String names(Access access) {
        return access.roles().stream().map(Role::configName).sorted().toList().toString();
    }

    private static void reject(
            HttpServletRequest request,
            HttpServletResponse response,
            ProblemKind kind,
            String detail)
            throws IOException {
        reject(request, response, kind, detail, Map.of());
    }

    private static void reject(
            HttpServletRequest request,
            HttpServletResponse response,
            ProblemKind kind,
            String detail,
            Map<String, Object> members)
            throws IOException {
        Map<String, Object> body = kind.members(kind.status().value(), detail);
        body.put("instance", request.getRequestURI());
        body.putAll(members);
        response.setStatus(kind.status().value());
        response.setContentType(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        response.setCharacterEncoding(StandardCharsets.UTF_8.name());
        response.getOutputStream().write(JSON.writeValueAsBytes(body));
    }
}
