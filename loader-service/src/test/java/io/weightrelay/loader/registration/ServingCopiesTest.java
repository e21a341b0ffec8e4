package io.weightrelay.loader.registration;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A staged worker's serving copy: made at registration, untouched while a new generation lands in
 * the receive segment, equal to it once installed, gone with it.
 */
class ServingCopiesTest {
    @TempDir Path dir;

    @Test
    void theServingCopyHoldsTheOldBytesUntilTheInstallCopiesTheNewOnes() throws Exception {
        Path segment = dir.resolve("wr-seg-i0000-r000");
        int size = 3 * 4096 + 17;
        byte[] old = bytes(size, 1);
        Files.write(segment, old);
        ServingCopies.create(segment, size);
        Path serving = ServingCopies.of(segment);
        assertThat(serving.getFileName().toString()).isEqualTo("wr-seg-i0000-r000.serving");
        assertThat(Files.size(serving)).isEqualTo(size);

        assertThat(ServingCopies.install(segment, size)).isEqualTo(size);
        assertThat(Files.readAllBytes(serving)).isEqualTo(old);

        byte[] fetched = bytes(size, 2);
        Files.write(segment, fetched);
        assertThat(Files.readAllBytes(serving)).as("a fetch leaves what is served").isEqualTo(old);

        ServingCopies.create(segment, size);
        assertThat(Files.readAllBytes(serving))
                .as("creating it again keeps the weights served")
                .isEqualTo(old);

        ServingCopies.install(segment, size);
        assertThat(Files.readAllBytes(serving)).isEqualTo(fetched);

        ServingCopies.delete(segment);
        assertThat(serving).doesNotExist();
    }

    @Test
    void anInstallWithoutACopyMakesOne() throws Exception {
        Path segment = dir.resolve("seg");
        byte[] fetched = bytes(5000, 3);
        Files.write(segment, fetched);
        ServingCopies.install(segment, fetched.length);
        assertThat(Files.readAllBytes(ServingCopies.of(segment))).isEqualTo(fetched);
    }

    private static byte[] bytes(int n, long seed) {
        byte[] out = new byte[n];
        new Random(seed).nextBytes(out);
        return out;
    }

    @Test
    void theCopiesAProcessMadeAreRemovedTogetherWhenItsDataPlaneCloses() throws Exception {
        Path a = dir.resolve("wr-seg-i0000-r000");
        Path b = dir.resolve("wr-seg-i0000-r001");
        Path removedAlready = dir.resolve("wr-seg-i0001-r000");
        for (Path segment : new Path[] {a, b, removedAlready}) {
            Files.write(segment, bytes(4096, 3));
            ServingCopies.create(segment, 4096);
        }
        ServingCopies.delete(removedAlready);

        assertThat(ServingCopies.deleteAll()).isEmpty();
        assertThat(ServingCopies.of(a)).doesNotExist();
        assertThat(ServingCopies.of(b)).doesNotExist();
        assertThat(a).as("the receive segments are the data plane's").exists();
        assertThat(ServingCopies.deleteAll()).as("nothing left to remove").isEmpty();
    }
}
