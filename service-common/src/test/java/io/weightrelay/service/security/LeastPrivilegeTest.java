package io.weightrelay.service.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/** Roles per duty, tokens bound to an identity, and security that is off only on loopback. */
class LeastPrivilegeTest {

    private static final String LOADER_A = "loader-a-token-0123456789";
    private static final String LOADER_ANY = "loader-any-token-0123456789";
    private static final String METRICS = "metrics-token-0123456789";
    private static final String OPERATOR = "operator-token-0123456789";

    static final class Rules extends AccessRules {
        Rules() {
            super(
                    Access.roles(Role.LOADER, Role.OPERATOR),
                    Access.roles(Role.OPERATOR),
                    rule(
                            "PUT",
                            "/api/v1/loaders/(?<id>[^/]+)",
                            Access.roles(Role.LOADER),
                            "instance"));
        }
    }

    private final RoleTokenFilter filter =
            new RoleTokenFilter(
                    new Rules(),
                    new RoleTokenProperties(
                            true,
                            Map.of(
                                    Role.LOADER, List.of(LOADER_ANY),
                                    Role.METRICS, List.of(METRICS),
                                    Role.OPERATOR, List.of(OPERATOR)),
                            List.of(new BoundToken(Role.LOADER, "inst-a", LOADER_A))));

    private MockHttpServletResponse run(String method, String path, String token) throws Exception {
        MockHttpServletRequest request = new MockHttpServletRequest(method, path);
        request.addHeader("Authorization", "Bearer " + token);
        MockHttpServletResponse response = new MockHttpServletResponse();
        filter.doFilter(request, response, new MockFilterChain());
        return response;
    }

    @Test
    void aBoundTokenActsForItsOwnIdentityOnlyAndTheRefusalNamesBoth() throws Exception {
        assertThat(run("PUT", "/api/v1/loaders/inst-a", LOADER_A).getStatus()).isEqualTo(200);
        MockHttpServletResponse other = run("PUT", "/api/v1/loaders/inst-b", LOADER_A);
        assertThat(other.getStatus()).isEqualTo(403);
        assertThat(other.getContentType()).startsWith("application/problem+json");
        assertThat(other.getContentAsString())
                .contains("\"type\":\"https://weightrelay.io/problems/identity-mismatch\"")
                .contains("\"boundTo\":\"inst-a\"")
                .contains("\"requested\":\"inst-b\"")
                .contains("instance 'inst-a'")
                .contains("instance 'inst-b'")
                .doesNotContain(LOADER_A);
        // An unbound loader token still acts for any instance (existing deployments keep working).
        assertThat(run("PUT", "/api/v1/loaders/inst-b", LOADER_ANY).getStatus()).isEqualTo(200);
        // Requests about no identity are open to a bound token of the role.
        assertThat(run("GET", "/api/v1/plans/p", LOADER_A).getStatus()).isEqualTo(200);
    }

    @Test
    void theMetricsRoleScrapesAndNothingElse() throws Exception {
        assertThat(run("GET", "/actuator/prometheus", METRICS).getStatus()).isEqualTo(200);
        assertThat(run("GET", "/actuator/prometheus", OPERATOR).getStatus()).isEqualTo(200);
        assertThat(run("GET", "/actuator/prometheus", LOADER_ANY).getStatus()).isEqualTo(403);
        assertThat(run("GET", "/api/v1/plans/p", METRICS).getStatus()).isEqualTo(403);
        assertThat(run("GET", "/actuator/metrics", METRICS).getStatus()).isEqualTo(403);
        assertThat(run("PUT", "/api/v1/loaders/inst-a", METRICS).getStatus()).isEqualTo(403);
    }

    @Test
    void boundTokensAreCheckedAndNeverPrinted() {
        assertThatThrownBy(
                        () ->
                                new RoleTokenProperties(
                                        true,
                                        Map.of(),
                                        List.of(new BoundToken(Role.LOADER, "i", "x1y2z3"))))
                .hasMessageContaining("relay.security.bound[0]")
                .hasMessageNotContaining("x1y2z3");
        assertThatThrownBy(
                        () ->
                                new RoleTokenProperties(
                                        true,
                                        Map.of(),
                                        List.of(new BoundToken(Role.LOADER, " ", LOADER_A))))
                .hasMessageContaining("relay.security.bound[0] needs a role and an identity");
        RoleTokenProperties properties =
                new RoleTokenProperties(
                        true,
                        Map.of(Role.LOADER, List.of(LOADER_ANY)),
                        List.of(new BoundToken(Role.LOADER, "inst-a", LOADER_A)));
        assertThat(properties.toString()).doesNotContain(LOADER_A).doesNotContain(LOADER_ANY);
        assertThat(properties.allTokens()).containsExactlyInAnyOrder(LOADER_A, LOADER_ANY);
    }

    @Test
    void aTokenOfTwoRolesOrBothUnboundAndBoundIsRefusedNamingTheRolesNotTheToken() {
        String shared = "shared-token-0123456789";
        assertThatThrownBy(
                        () ->
                                new RoleTokenProperties(
                                        true,
                                        Map.of(
                                                Role.TRAINER, List.of(OPERATOR + "-t", shared),
                                                Role.OWNER, List.of(shared))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("relay.security.tokens.trainer[1]")
                .hasMessageContaining("relay.security.tokens.owner[0]")
                .hasMessageContaining("roles trainer and owner")
                .hasMessageNotContaining(shared);
        assertThatThrownBy(
                        () ->
                                new RoleTokenProperties(
                                        true,
                                        Map.of(Role.LOADER, List.of(shared)),
                                        List.of(new BoundToken(Role.LOADER, "inst-a", shared))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("relay.security.tokens.loader[0]")
                .hasMessageContaining("relay.security.bound[0] (loader bound to 'inst-a')")
                .hasMessageNotContaining(shared);
        assertThatThrownBy(
                        () ->
                                new RoleTokenProperties(
                                        true,
                                        Map.of(),
                                        List.of(
                                                new BoundToken(Role.LOADER, "inst-a", LOADER_A),
                                                new BoundToken(Role.OWNER, "seg-a", shared),
                                                new BoundToken(Role.LOADER, "inst-b", LOADER_A))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("relay.security.bound[0] (loader bound to 'inst-a')")
                .hasMessageContaining("relay.security.bound[2] (loader bound to 'inst-b')")
                .hasMessageNotContaining(LOADER_A);
        // The same token listed twice for one caller is only redundant, and still accepted.
        new RoleTokenProperties(
                true,
                Map.of(Role.LOADER, List.of(LOADER_ANY, LOADER_ANY)),
                List.of(
                        new BoundToken(Role.LOADER, "inst-a", LOADER_A),
                        new BoundToken(Role.LOADER, "inst-a", LOADER_A)));
    }

    @Test
    void disablingSecurityIsRefusedUnlessTheServiceBindsOnlyLoopback() {
        RoleTokenProperties off = new RoleTokenProperties(false, Map.of());
        for (String address :
                new String[] {null, "", "0.0.0.0", "::", "198.18.0.1", "relay.example"}) {
            assertThatThrownBy(
                            () ->
                                    RoleTokenSecurityAutoConfiguration.checkDisabledOnlyOnLoopback(
                                            off, address))
                    .as("server.address=%s", address)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("relay.security.enabled=false is refused")
                    .hasMessageContaining("server.address");
        }
        for (String address : new String[] {"127.0.0.1", "::1", "localhost"}) {
            RoleTokenSecurityAutoConfiguration.checkDisabledOnlyOnLoopback(off, address);
        }
        RoleTokenSecurityAutoConfiguration.checkDisabledOnlyOnLoopback(
                new RoleTokenProperties(true, Map.of()), "0.0.0.0");
    }
}
