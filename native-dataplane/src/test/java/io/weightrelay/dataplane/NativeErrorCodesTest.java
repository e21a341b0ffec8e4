package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.internal.DpNative;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The Java status codes are the C API's: checked against the table the library itself exports. */
class NativeErrorCodesTest {

    @Test
    void everyNativeErrorIsTheJavaConstantOfTheSameNameAndCode() {
        DpNative.load();
        int count = DpNative.dp_error_codes(null, 0);
        int[] codes = new int[count];
        assertThat(DpNative.dp_error_codes(codes, count)).isEqualTo(count);
        List<String> nativeErrors =
                Arrays.stream(codes).filter(c -> c < 0).mapToObj(DpNative::dp_error_name).toList();
        assertThat(nativeErrors)
                .containsExactlyInAnyOrderElementsOf(
                        Arrays.stream(DataplaneError.values()).map(Enum::name).toList());
        for (DataplaneError e : DataplaneError.values()) {
            assertThat(DpNative.dp_error_name(e.code()))
                    .as("code %d", e.code())
                    .isEqualTo(e.name());
        }
    }
}
