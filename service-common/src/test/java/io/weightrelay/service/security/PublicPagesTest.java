package io.weightrelay.service.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;

/**
 * Static pages a policy opens (an operator console) are anonymous exactly at the paths named, and
 * no path the container could resolve elsewhere is opened because it starts with one of them.
 */
class PublicPagesTest {

    static final class Rules extends AccessRules {
        Rules() {
            super(
                    Access.roles(Role.OPERATOR),
                    Access.roles(Role.OPERATOR),
                    List.of("/console", "/console/"));
        }
    }

    private final Rules rules = new Rules();

    private Access access(String method, String uri) {
        MockHttpServletRequest request = new MockHttpServletRequest(method, uri);
        return rules.access(request);
    }

    @Test
    void theNamedPageAndWhatIsUnderItsFolderAreAnonymous() {
        for (String path :
                List.of("/console", "/console/", "/console/index.html", "/console/console.js")) {
            assertThat(access("GET", path).isAnonymous()).as(path).isTrue();
        }
    }

    @Test
    void neighboursDotSegmentsEncodingsAndPathParametersAreNotPublic() {
        for (String path :
                List.of(
                        "/consoles",
                        "/console.js",
                        "/consolex/index.html",
                        "/api/v1/console/",
                        "/console/../api/v1/operator/segments",
                        "/console/./index.html",
                        "/console/%2e%2e/api/v1/operator/segments",
                        "/console/%2F..%2Fapi",
                        "/console/;x=1/../api/v1/operator/segments",
                        "/console/..\\api\\v1")) {
            assertThat(access("GET", path).isAnonymous()).as(path).isFalse();
        }
    }

    @Test
    void aPolicyWithoutPublicPagesOpensOnlyHealthAndTheDocs() {
        AccessRules plain =
                new AccessRules(Access.roles(Role.OPERATOR), Access.roles(Role.OPERATOR)) {};
        assertThat(plain.access(new MockHttpServletRequest("GET", "/console/")).isAnonymous())
                .isFalse();
        assertThat(
                        plain.access(new MockHttpServletRequest("GET", "/actuator/health"))
                                .isAnonymous())
                .isTrue();
    }
}
