package io.weightrelay.reshard.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class GenerationIdTest {

    @Test
    void aPathNamesTheGenerationAndBackEvenWhenTheModelHasSlashes() {
        GenerationId id = new GenerationId("org/llama-8b", 12);
        assertThat(id.path()).isEqualTo("org/llama-8b/12");
        assertThat(GenerationId.ofPath(id.path())).isEqualTo(id);
        assertThat(id.objectKey("w@0")).isEqualTo("org/llama-8b/12/w@0").startsWith(id.path());
    }

    @Test
    void textThatIsNoPathIsRefusedNamingIt() {
        for (String bad : new String[] {"llama", "llama/x", "/3", "llama/0"}) {
            assertThatThrownBy(() -> GenerationId.ofPath(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'" + bad + "'");
        }
    }
}
