package io.weightrelay.control.web;

import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.Refusals;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvFileSource;

/**
 * Every operation refuses a request about what is stored (an unknown generation, model, segment,
 * loader, plan or session, a generation in the wrong state) with the right status and a stable
 * problem type. What the web layer refuses on its own is {@code web.RequestRefusalTest}'s.
 */
class BadInputTest extends ControlApiTestSupport {

    private static String model;

    @BeforeEach
    void publishOnce() {
        if (model == null) {
            model = newModel();
            publish(model, 1);
            open(model, 2);
        }
    }

    @ParameterizedTest(name = "{0} {1} as {2} -> {4} {5}")
    @CsvFileSource(
            resources = "/refusals/stored-state.csv",
            delimiterString = "|",
            quoteCharacter = Refusals.QUOTE)
    void refused(String method, String path, String role, String body, int status, String type) {
        String p = Refusals.expand(path, model);
        assertProblem(
                call(method, p, Refusals.token(role), Refusals.expand(body, model)), status, type);
    }
}
