package io.weightrelay.service.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

class RoleTokenFilterTest {

    private static final String TRAINER = "trainer-token-0123456789";
    private static final String OPERATOR = "operator-token-0123456789";

    private final RoleTokenFilter filter =
            new RoleTokenFilter(
                    request ->
                            AccessPolicy.isPublicDocsOrHealth(request.getRequestURI())
                                    ? Access.anonymous()
                                    : Access.roles(Role.TRAINER),
                    new RoleTokenProperties(
                            true,
                            Map.of(
                                    Role.TRAINER, List.of(TRAINER),
                                    Role.OPERATOR, List.of(OPERATOR))));

    private MockHttpServletResponse run(String path, String authorization) throws Exception {
        MockHttpServletRequest request = new MockHttpServletRequest("POST", path);
        if (authorization != null) {
            request.addHeader("Authorization", authorization);
        }
        MockHttpServletResponse response = new MockHttpServletResponse();
        filter.doFilter(request, response, new MockFilterChain());
        return response;
    }

    @Test
    void allowsTheRightRoleAndAnonymousDocs() throws Exception {
        assertThat(run("/api/v1/x", "Bearer " + TRAINER).getStatus()).isEqualTo(200);
        assertThat(run("/api/v1/x", "bearer " + TRAINER).getStatus()).isEqualTo(200);
        assertThat(run("/actuator/health", null).getStatus()).isEqualTo(200);
        assertThat(run("/v3/api-docs", null).getStatus()).isEqualTo(200);
        assertThat(run("/swagger-ui/index.html", null).getStatus()).isEqualTo(200);
    }

    @Test
    void missingOrUnknownTokenIs401AndWrongRoleIs403AsProblemJson() throws Exception {
        MockHttpServletResponse none = run("/api/v1/x", null);
        assertThat(none.getStatus()).isEqualTo(401);
        assertThat(none.getHeader("WWW-Authenticate")).isEqualTo("Bearer");
        assertThat(none.getContentType()).startsWith("application/problem+json");
        assertThat(none.getContentAsString())
                .contains("\"type\":\"https://weightrelay.io/problems/unauthorized\"");
        assertThat(run("/api/v1/x", "Bearer " + TRAINER + "x").getStatus()).isEqualTo(401);
        assertThat(run("/api/v1/x", "Basic " + TRAINER).getStatus()).isEqualTo(401);
        MockHttpServletResponse wrongRole = run("/api/v1/x", "Bearer " + OPERATOR);
        assertThat(wrongRole.getStatus()).isEqualTo(403);
        assertThat(wrongRole.getContentAsString())
                .contains("\"type\":\"https://weightrelay.io/problems/forbidden\"");
    }

    @Test
    void authenticatorFindsTheRoleAndRejectsEverythingElse() {
        TokenAuthenticator authenticator =
                new TokenAuthenticator(
                        Map.of(Role.LOADER, List.of("a".repeat(20), "b".repeat(20))));
        assertThat(authenticator.authenticate("b".repeat(20))).contains(Role.LOADER);
        assertThat(authenticator.authenticate("b".repeat(19))).isEmpty();
        assertThat(authenticator.authenticate("")).isEmpty();
    }

    @Test
    void shortTokensAreRefusedAtStartup() {
        assertThatThrownBy(
                        () -> new RoleTokenProperties(true, Map.of(Role.LOADER, List.of("short"))))
                .hasMessageContaining("relay.security.tokens.loader");
    }
}
