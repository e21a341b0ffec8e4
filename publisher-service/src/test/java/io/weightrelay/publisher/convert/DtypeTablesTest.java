package io.weightrelay.publisher.convert;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.reshard.manifest.DType;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The dtype vocabulary has one table, reshard's {@link DType} (names, widths, wire names); the
 * contracts' one {@code Dtype} (generated once, from common.yaml, for every contract, server and
 * client) must name the same types.
 */
class DtypeTablesTest {

    @Test
    void everyContractDtypeMapsBothWaysWithTheSameWidthEverywhere() {
        for (Dtype api : Dtype.values()) {
            String name = api.getValue();
            DType reshard = DType.ofWireName(name);
            assertThat(reshard.wireName()).as(name).isEqualTo(name);
            assertThat(reshard.bytes()).as(name).isPositive();
            assertThat(Dtype.fromValue(name).getValue()).isEqualTo(name);
        }
        assertThat(DType.onTheWire().stream().map(DType::wireName))
                .containsExactlyInAnyOrderElementsOf(
                        Arrays.stream(Dtype.values()).map(Dtype::getValue).toList());
        assertThat(DType.ofWireName("fp8_e4m3")).isEqualTo(DType.F8_E4M3);
        assertThat(DType.F8_E4M3.bytes()).isEqualTo(1);
        assertThat(DType.F8_E4M3.safetensorsName()).isEqualTo("F8_E4M3");
    }
}
