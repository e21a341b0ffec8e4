package io.weightrelay.service.files;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A manifest's file name may only name a file below its directory; syncing a directory works. */
class DirectoryFilesTest {

    @Test
    void onlyRelativeNamesThatStayBelowTheDirectoryPass() {
        assertThat(DirectoryFiles.staysInside("objects.bin")).isTrue();
        assertThat(DirectoryFiles.staysInside("node-1/objects.bin")).isTrue();
        for (String outside :
                new String[] {
                    null, "", "/etc/passwd", "../x", "a/../../x", "a//b", "./x", "a/.", "a/"
                }) {
            assertThat(DirectoryFiles.staysInside(outside)).as("'%s'", outside).isFalse();
        }
    }

    @Test
    void aDirectoryWithANewFileSyncs(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("new"), "x");
        DirectoryFiles.sync(dir);
        assertThat(dir.resolve("new")).hasContent("x");
    }
}
