package io.weightrelay.service.problem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;

class ProblemCatalogTest {

    @Test
    void aConstantIsTheRowOfItsSlug() {
        assertThat(CommonProblems.GENERATION_NOT_FOUND.type())
                .hasToString("https://weightrelay.io/problems/generation-not-found");
        assertThat(CommonProblems.GENERATION_NOT_FOUND.status()).isEqualTo(HttpStatus.NOT_FOUND);
        assertThat(CommonProblems.INTERNAL.slug()).isEqualTo("internal-error");
        assertThat(CommonProblems.OVERLOADED.title()).isEqualTo("Too much work in flight");
        assertThat(CommonProblems.forStatus(503)).isSameAs(CommonProblems.UNAVAILABLE);
    }

    @Test
    void everyCataloguedKindOfTheClasspathHasItsRow() {
        ProblemAutoConfiguration.verifyAll(List.of("io.weightrelay"));
        assertThat(ProblemCatalog.kinds()).containsKeys("invalid-request", "overloaded");
    }

    @Test
    void aSlugWithoutARowIsNamed() {
        assertThatThrownBy(() -> ProblemCatalog.kind("no-such-problem"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no-such-problem");
    }

    @Test
    void aKindOutsideTheCatalogIsKebabCase() {
        assertThat(ProblemKind.of("remote-kind", HttpStatus.CONFLICT, "Remote").type())
                .hasToString(ProblemKind.TYPE_BASE + "remote-kind");
        assertThatThrownBy(() -> ProblemKind.of("Not Kebab", HttpStatus.CONFLICT, "x"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
