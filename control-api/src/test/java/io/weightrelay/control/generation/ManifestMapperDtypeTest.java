package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.Dtype;
import org.junit.jupiter.api.Test;

/** Every contract dtype maps to reshard's table, which names it back the same way. */
class ManifestMapperDtypeTest {

    @Test
    void everyContractDtypeMapsAsTheSharedTableMapsIt() {
        for (Dtype d : Dtype.values()) {
            assertThat(ManifestMapper.dtype(d).wireName()).as(d.getValue()).isEqualTo(d.getValue());
        }
    }
}
