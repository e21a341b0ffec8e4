package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.internal.DpNative;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.bytedeco.javacpp.annotation.Platform;
import org.junit.jupiter.api.Test;

/** The JavaCPP build compiles every C++ source of the engine: none is left out of the library. */
class NativeSourcesTest {

    @Test
    void theBindingIncludesEverySourceFile() throws IOException {
        String[] included = DpNative.class.getAnnotation(Platform.class).include();
        try (Stream<Path> files = Files.list(Path.of("src/main/cpp"))) {
            assertThat(Arrays.stream(included).filter(f -> f.endsWith(".cc")).toList())
                    .containsExactlyInAnyOrderElementsOf(
                            files.map(f -> f.getFileName().toString())
                                    .filter(f -> f.endsWith(".cc"))
                                    .toList());
        }
    }
}
