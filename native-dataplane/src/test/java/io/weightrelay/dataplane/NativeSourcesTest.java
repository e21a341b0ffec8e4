package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.bytedeco.javacpp.annotation.Platform;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each JavaCPP binding compiles every C++ source of its directory: none is left out of its library
 * (the data plane's, or the benchmark's yardsticks').
 */
class NativeSourcesTest {

    @ParameterizedTest
    @CsvSource({
        "io.weightrelay.dataplane.internal.DpNative, src/main/cpp",
        "io.weightrelay.dataplane.bench.BenchNative, src/bench/cpp"
    })
    void theBindingIncludesEverySourceFileOfItsDirectory(String binding, String dir)
            throws IOException, ClassNotFoundException {
        String[] included =
                Class.forName(binding, false, getClass().getClassLoader())
                        .getAnnotation(Platform.class)
                        .include();
        try (Stream<Path> files = Files.list(Path.of(dir))) {
            assertThat(Arrays.stream(included).filter(f -> f.endsWith(".cc")).toList())
                    .containsExactlyInAnyOrderElementsOf(
                            files.map(f -> f.getFileName().toString())
                                    .filter(f -> f.endsWith(".cc"))
                                    .toList());
        }
    }
}
