package io.weightrelay.loader.web;

import static io.weightrelay.service.security.Role.LOADER;
import static io.weightrelay.service.security.Role.OPERATOR;

import io.weightrelay.service.security.Access;
import io.weightrelay.service.security.AccessPolicy;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.stereotype.Component;

/**
 * Who may call the loader: its engine, with the {@code loader} role token it shares with its
 * loader, registers, updates and tears down; operators may do the same (a rebuild) and read. Health
 * and the API docs are open; {@code /actuator/prometheus} takes a metrics (or operator) token;
 * everything else (actuator) needs an operator token.
 */
@Component
class LoaderAccessPolicy implements AccessPolicy {
    private static final Access ENGINE_OR_OPERATOR = Access.roles(LOADER, OPERATOR);

    @Override
    public Access access(HttpServletRequest request) {
        String path = request.getRequestURI().substring(request.getContextPath().length());
        if (AccessPolicy.isPublicDocsOrHealth(path)) {
            return Access.anonymous();
        }
        if (AccessPolicy.isMetrics(path)) {
            return AccessPolicy.METRICS_ACCESS;
        }
        if (path.startsWith("/api/v1/")) {
            return ENGINE_OR_OPERATOR;
        }
        return Access.roles(OPERATOR);
    }
}
