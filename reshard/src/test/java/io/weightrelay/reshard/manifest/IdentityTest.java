package io.weightrelay.reshard.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class IdentityTest {

    @Test
    void readsAsModelAtGeneration() {
        assertThat(new GenerationId("llama-8b", 12)).hasToString("llama-8b@g12");
        assertThat(new SessionKey(new GenerationId("llama-8b", 12), "a"))
                .hasToString("llama-8b@g12/a");
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
        assertThatThrownBy(() -> new SessionKey(new GenerationId("m", 1), ""))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
