package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.Dtypes;
import io.weightrelay.api.control.model.Dtype;
import org.junit.jupiter.api.Test;

/** control-api's own dtype table agrees with the shared one ({@link Dtypes}). */
class ManifestMapperDtypeTest {

    @Test
    void everyContractDtypeMapsAsTheSharedTableMapsIt() {
        for (Dtype d : Dtype.values()) {
            assertThat(ManifestMapper.dtype(d))
                    .as(d.getValue())
                    .isEqualTo(Dtypes.parse(d.getValue()));
        }
    }
}
