package io.weightrelay.lab.hosts;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class HostLabClassPathTest {

    /** A host's JVM runs elsewhere: a relative entry would name nothing there. */
    @Test
    void everyEntryOfTheClassPathAHostGetsIsAbsoluteAndNamesTheSameFile() {
        List<String> mine =
                List.of(System.getProperty("java.class.path").split(File.pathSeparator));
        List<String> theirs = List.of(HostLab.absoluteClassPath().split(File.pathSeparator));

        assertThat(theirs).hasSameSizeAs(mine).allMatch(e -> Path.of(e).isAbsolute());
        for (int i = 0; i < mine.size(); i++) {
            assertThat(Path.of(theirs.get(i))).isEqualTo(Path.of(mine.get(i)).toAbsolutePath());
        }
    }
}
