package io.weightrelay.loader.registration;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A staged worker's serving copy: made at registration, untouched while a new generation lands in
 * the receive segment, equal to it once installed, gone with it. The receive segments are real ones
 * in shared memory (the machine's Redis under a key prefix of its own).
 */
class ServingCopiesTest {
    private final String prefix = RedisTestSupport.uniqueKeyPrefix("loader-serving");
    private Dataplane loader;

    @BeforeEach
    void open() {
        loader = TestDataplane.open("rollout-0", prefix);
    }

    @AfterEach
    void close() {
        ServingCopies.deleteAll();
        loader.close();
        RedisTestSupport.deleteKeys(prefix);
    }

    @Test
    void theServingCopyHoldsTheOldBytesUntilTheInstallCopiesTheNewOnes() throws Exception {
        int size = 3 * 4096 + 17;
        Segment segment = loader.createReceiveSegment("serving-a", size);
        byte[] old = bytes(size, 1);
        segment.byteBuffer().put(old);
        ServingCopies.create(segment.shmPath(), size);
        Path serving = ServingCopies.of(segment.shmPath());
        assertThat(serving.getFileName().toString())
                .isEqualTo(segment.shmPath().getFileName() + ".serving");
        assertThat(Files.size(serving)).isEqualTo(size);

        assertThat(ServingCopies.install(segment, size)).isEqualTo(size);
        assertThat(Files.readAllBytes(serving)).isEqualTo(old);

        byte[] fetched = bytes(size, 2);
        segment.byteBuffer().put(fetched);
        assertThat(Files.readAllBytes(serving)).as("a fetch leaves what is served").isEqualTo(old);

        ServingCopies.create(segment.shmPath(), size);
        assertThat(Files.readAllBytes(serving))
                .as("creating it again keeps the weights served")
                .isEqualTo(old);

        ServingCopies.install(segment, size);
        assertThat(Files.readAllBytes(serving)).isEqualTo(fetched);

        ServingCopies.delete(segment.shmPath());
        assertThat(serving).doesNotExist();
    }

    @Test
    void anInstallWithoutACopyMakesOne() throws Exception {
        Segment segment = loader.createReceiveSegment("serving-b", 5000);
        byte[] fetched = bytes(5000, 3);
        segment.byteBuffer().put(fetched);
        ServingCopies.install(segment, fetched.length);
        assertThat(Files.readAllBytes(ServingCopies.of(segment.shmPath()))).isEqualTo(fetched);
    }

    /**
     * A copy removed behind this process's back (an operator cleaning {@code /dev/shm}) is made
     * again by the next install instead of landing in a mapping of a file no engine can open.
     */
    @Test
    void aCopyRemovedFromSharedMemoryIsMadeAgainByTheNextInstall() throws Exception {
        Segment segment = loader.createReceiveSegment("serving-c", 8192);
        ServingCopies.create(segment.shmPath(), 8192);
        Files.delete(ServingCopies.of(segment.shmPath()));
        byte[] fetched = bytes(8192, 4);
        segment.byteBuffer().put(fetched);

        ServingCopies.install(segment, 8192);

        assertThat(Files.readAllBytes(ServingCopies.of(segment.shmPath()))).isEqualTo(fetched);
    }

    /**
     * The copy is kept mapped from its making to its removal: an install after a removal of the
     * copy makes a new, correct one (the old mapping is gone, not written through).
     */
    @Test
    void anInstallAfterTheCopyWasRemovedWritesANewCopy() throws Exception {
        Segment segment = loader.createReceiveSegment("serving-d", 4096);
        ServingCopies.create(segment.shmPath(), 4096);
        ServingCopies.delete(segment.shmPath());
        ByteBuffer view = segment.byteBuffer();
        byte[] fetched = bytes(4096, 5);
        view.put(fetched);

        ServingCopies.install(segment, 4096);

        assertThat(Files.readAllBytes(ServingCopies.of(segment.shmPath()))).isEqualTo(fetched);
    }

    private static byte[] bytes(int n, long seed) {
        byte[] out = new byte[n];
        new Random(seed).nextBytes(out);
        return out;
    }

    @Test
    void theCopiesAProcessMadeAreRemovedTogetherWhenItsDataPlaneCloses() throws Exception {
        Segment a = loader.createReceiveSegment("serving-e", 4096);
        Segment b = loader.createReceiveSegment("serving-f", 4096);
        Segment removedAlready = loader.createReceiveSegment("serving-g", 4096);
        for (Segment segment : new Segment[] {a, b, removedAlready}) {
            ServingCopies.create(segment.shmPath(), 4096);
        }
        ServingCopies.delete(removedAlready.shmPath());

        assertThat(ServingCopies.deleteAll()).isEmpty();
        assertThat(ServingCopies.of(a.shmPath())).doesNotExist();
        assertThat(ServingCopies.of(b.shmPath())).doesNotExist();
        assertThat(a.shmPath()).as("the receive segments are the data plane's").exists();
        assertThat(ServingCopies.deleteAll()).as("nothing left to remove").isEmpty();
    }
}
