package io.weightrelay.service.security;

import jakarta.servlet.http.HttpServletRequest;

/**
 * A service's access rules. Declaring a bean of this type switches on {@link RoleTokenFilter}.
 * Rules see the method and the path inside the servlet context; anything a policy does not name
 * should need a token.
 */
@FunctionalInterface
public interface AccessPolicy {

    /** The access the request needs. */
    Access access(HttpServletRequest request);

    /** Who may scrape metrics: the metrics role (nothing else) and operators. */
    Access METRICS_ACCESS = Access.roles(Role.METRICS, Role.OPERATOR);

    /** The metrics endpoint, the only one a {@link Role#METRICS} token opens. */
    static boolean isMetrics(String path) {
        return path.equals("/actuator/prometheus");
    }

    /** Paths every service leaves open: health probes, the contracts and Swagger UI. */
    static boolean isPublicDocsOrHealth(String path) {
        return path.equals("/actuator/health")
                || path.startsWith("/actuator/health/")
                || path.equals("/v3/api-docs")
                || path.startsWith("/v3/api-docs/")
                || path.startsWith("/openapi/")
                || path.equals("/swagger-ui.html")
                || path.startsWith("/swagger-ui/");
    }
}
