package io.weightrelay.loader.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.GenerationState;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The loader's generation states are the contract's, so every answer maps onto one. */
class GenerationStateTest {

    @Test
    void theLoaderKnowsEveryStateOfTheContract() {
        assertThat(Arrays.stream(ControlPlane.GenerationState.values()).map(Enum::name))
                .containsExactlyInAnyOrderElementsOf(
                        Arrays.stream(GenerationState.values())
                                .map(GenerationState::getValue)
                                .toList());
    }

    @Test
    void onlyCommittedWholeGenerationsAreLoadable() {
        assertThat(
                        Arrays.stream(ControlPlane.GenerationState.values())
                                .filter(ControlPlane.GenerationState::loadable))
                .containsExactly(
                        ControlPlane.GenerationState.ACTIVE, ControlPlane.GenerationState.RETIRED);
    }
}
