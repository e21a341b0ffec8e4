package io.weightrelay.loader.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The lab's flaky-reads knob reads its file on every read: present, it says how; absent, none. */
class FlakyReadsTest {

    @Test
    void theFileSaysHowReadsGoWrongAndRemovingItHealsThem(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("flaky");
        FlakyReads reads = new FlakyReads(file);
        assertThat(reads.mode()).isNull();

        Files.writeString(file, "fail\n");
        assertThat(reads.mode()).isEqualTo(FlakyReads.Mode.FAIL);
        Files.writeString(file, "Wrong-Bytes");
        assertThat(reads.mode()).isEqualTo(FlakyReads.Mode.WRONG_BYTES);
        Files.writeString(file, "something else");
        assertThat(reads.mode()).as("an unknown word injects nothing").isNull();

        Files.delete(file);
        assertThat(reads.mode()).isNull();
    }
}
