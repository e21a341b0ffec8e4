package io.weightrelay.control.identity;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class GenerationIdTest {

    @Test
    void readsAsModelAtGeneration() {
        assertThat(new GenerationId("llama-8b", 12)).hasToString("llama-8b@g12");
        assertThat(new GenerationId("llama-8b", 12).session("a")).hasToString("llama-8b@g12/a");
    }

    @Test
    void refusesWhatNoGenerationIsCalled() {
        assertThatThrownBy(() -> new GenerationId(null, 1))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new GenerationId(" ", 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new GenerationId("m", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("start at 1");
        assertThatThrownBy(() -> new GenerationId("m", 1).session(""))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
