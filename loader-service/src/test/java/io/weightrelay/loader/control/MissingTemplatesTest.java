package io.weightrelay.loader.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.PlacementTemplates;
import io.weightrelay.api.RemoteProblem;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.web.client.HttpClientErrorException;

/** On 409 placement-template-not-found a loader uploads only what the problem lists as missing. */
class MissingTemplatesTest {

    private static ControlPlaneException conflict(String body) {
        HttpClientErrorException cause =
                HttpClientErrorException.create(
                        HttpStatus.CONFLICT,
                        "Conflict",
                        new HttpHeaders(),
                        body.getBytes(StandardCharsets.UTF_8),
                        StandardCharsets.UTF_8);
        return new ControlPlaneException("register", RemoteProblem.of(cause), cause);
    }

    @Test
    void readsTheMissingDigests() {
        ControlPlaneException e =
                conflict(
                        "{\"type\":\"https://weightrelay.io/problems/placement-template-not-found\","
                                + "\"missing\":[\"aa\",\"bb\"]}");
        assertThat(PlacementTemplates.missing(e.problem())).containsExactlyInAnyOrder("aa", "bb");
    }

    @Test
    void withoutAListEveryTemplateGoesUp() {
        assertThat(PlacementTemplates.missing(conflict("{\"type\":\"x\"}").problem())).isNull();
        assertThat(PlacementTemplates.missing(conflict("not json").problem())).isNull();
        assertThat(
                        PlacementTemplates.missing(
                                new ControlPlaneException("unreachable", null).problem()))
                .isNull();
    }
}
