package io.weightrelay.publisher.convert;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.Dtypes;
import io.weightrelay.api.publisher.model.Dtype;
import io.weightrelay.reshard.manifest.DType;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The dtype vocabulary lives in several tables: the contracts' {@code Dtype} enum (and the code
 * generated from it), {@link Dtypes} (contract names to reshard's), reshard's {@link DType} with
 * its widths, and the publisher's {@link ElementType}. They must name the same types with the same
 * widths.
 */
class DtypeTablesTest {

    @Test
    void everyContractDtypeMapsBothWaysWithTheSameWidthEverywhere() {
        for (Dtype api : Dtype.values()) {
            String name = api.getValue();
            DType reshard = Dtypes.parse(name);
            assertThat(Dtypes.apiName(reshard)).as(name).isEqualTo(name);
            ElementType element = ElementType.ofApiName(name);
            assertThat(element.apiName()).isEqualTo(name);
            assertThat(element.bytes()).as(name).isEqualTo(reshard.bytes());
            assertThat(io.weightrelay.api.control.model.Dtype.fromValue(name).getValue())
                    .isEqualTo(name);
            assertThat(io.weightrelay.api.control.client.model.Dtype.fromValue(name).getValue())
                    .isEqualTo(name);
            assertThat(io.weightrelay.api.publisher.client.model.Dtype.fromValue(name).getValue())
                    .isEqualTo(name);
        }
        assertThat(Arrays.stream(ElementType.values()).map(ElementType::apiName))
                .containsExactlyInAnyOrderElementsOf(
                        Arrays.stream(Dtype.values()).map(Dtype::getValue).toList());
        assertThat(io.weightrelay.api.control.model.Dtype.values()).hasSameSizeAs(Dtype.values());
        assertThat(Dtypes.parse("fp8_e4m3")).isEqualTo(DType.F8_E4M3);
        assertThat(DType.F8_E4M3.bytes()).isEqualTo(1);
        assertThat(DType.F8_E4M3.safetensorsName()).isEqualTo("F8_E4M3");
    }
}
