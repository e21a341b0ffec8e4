package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.testkit.process.ChildJvm;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Segment files of an owner killed with SIGKILL are removed when a data plane opens on the host (or
 * whoever calls {@link Dataplane#reclaimOrphanedSegmentFiles}), with their sidecars, never those of
 * a live owner nor files that are not segment files; a segment file is exactly its segment's bytes
 * all along (a compat receive segment is the safetensors file an engine's loader opens). Real child
 * processes on loopback; the ownership lock itself (takeover, copies, links) is covered by the
 * native test driver too.
 */
class OrphanedSegmentFilesTest {
    @RegisterExtension static final TestScope scope = new TestScope();

    private static final Path SHM = Path.of("/dev/shm");
    private static final long SEGMENT = 1 << 20;

    private ChildJvm owner(String prefix, String... segments) throws Exception {
        String[] args = new String[segments.length + 2];
        args[0] = RedisSupport.URI;
        args[1] = prefix;
        System.arraycopy(segments, 0, args, 2, segments.length);
        return scope.closeAfter(ChildJvm.start("segment owner", SegmentOwnerMain.class, args));
    }

    private static List<Path> files(ChildJvm owner) {
        return Arrays.stream(owner.ready().split(" ")).map(Path::of).toList();
    }

    private static Path sidecar(Path segmentFile) {
        return Path.of(segmentFile + ".owner");
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void aKilledOwnersFilesGoWhenADataplaneOpensAndALiveOwnersAndOtherFilesStay() throws Exception {
        ChildJvm killed = owner(scope.prefix() + "killed:", "store-a", "recv-b");
        ChildJvm live = owner(scope.prefix() + "live:", "store-c", "recv-d");
        List<Path> killedFiles = files(killed);
        List<Path> liveFiles = files(live);
        assertThat(liveFiles)
                .as("a live owner's segment files hold exactly its segments' bytes")
                .allMatch(f -> size(f) == SEGMENT)
                .allMatch(f -> Files.exists(sidecar(f)));
        Object liveInode = Files.getAttribute(liveFiles.get(0), "unix:ino");
        // A staging file or an older data plane's segment: no ownership lock, never touched.
        Path foreign = SHM.resolve(Dataplane.shmFileName(scope.prefix(), "staging"));
        Files.write(foreign, new byte[4096]);
        try {
            killed.kill();
            assertThat(killedFiles).as("SIGKILL leaves the files").allMatch(Files::exists);
            assertThat(killedFiles).allMatch(f -> Files.exists(sidecar(f)));

            try (Dataplane next =
                    Dataplane.open(
                            TestEngines.config("node-a", scope.prefix() + "next:").build())) {
                assertThat(killedFiles).noneMatch(Files::exists);
                assertThat(killedFiles).noneMatch(f -> Files.exists(sidecar(f)));
                assertThat(liveFiles).allMatch(Files::exists);
                assertThat(liveFiles).allMatch(f -> Files.exists(sidecar(f)));
                assertThat(Files.getAttribute(liveFiles.get(0), "unix:ino")).isEqualTo(liveInode);
                assertThat(foreign).exists();
                // the live owner's segments still work, and it still closes them itself
                assertThat(live.ok("ping")).isEmpty();
            }
            live.close();
            assertThat(liveFiles).noneMatch(Files::exists);
            assertThat(liveFiles).noneMatch(f -> Files.exists(sidecar(f)));
        } finally {
            Files.deleteIfExists(foreign);
            for (Path f : killedFiles) {
                Files.deleteIfExists(f);
                Files.deleteIfExists(sidecar(f));
            }
        }
    }

    @Test
    void reclaimingReportsEachFileAndItsBytesAndLeavesNothingForTheNextCall() throws Exception {
        ChildJvm killed = owner(scope.prefix() + "killed:", "store-e");
        Path file = files(killed).get(0);
        try {
            killed.kill();

            List<ReclaimedSegmentFile> reclaimed = Dataplane.reclaimOrphanedSegmentFiles(SHM);

            assertThat(reclaimed)
                    .filteredOn(r -> r.path().equals(file))
                    .singleElement()
                    .satisfies(r -> assertThat(r.bytes()).isEqualTo(SEGMENT));
            assertThat(file).doesNotExist();
            assertThat(sidecar(file)).doesNotExist();
            assertThat(Dataplane.reclaimOrphanedSegmentFiles(SHM))
                    .noneMatch(r -> r.path().equals(file));
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(sidecar(file));
        }
    }

    /**
     * A creator killed between making its sidecar and writing its record (a few system calls under
     * the directory lock) leaves an empty sidecar, and an empty segment file or none: the next
     * sweep removes them (reporting the segment file with its 0 bytes) instead of keeping them
     * forever as not-quite-segment files.
     */
    @Test
    void theEmptyFilesOfACreatorKilledBeforeItsRecordGoAtTheNextSweep() throws Exception {
        Path file = SHM.resolve(Dataplane.shmFileName(scope.prefix(), "unwritten"));
        Path lone = SHM.resolve(Dataplane.shmFileName(scope.prefix(), "unwritten-alone"));
        try {
            Files.createFile(sidecar(file));
            Files.createFile(file);
            Files.createFile(sidecar(lone));

            List<ReclaimedSegmentFile> reclaimed = Dataplane.reclaimOrphanedSegmentFiles(SHM);

            assertThat(reclaimed)
                    .filteredOn(r -> r.path().equals(file))
                    .singleElement()
                    .satisfies(r -> assertThat(r.bytes()).isZero());
            assertThat(reclaimed).noneMatch(r -> r.path().equals(lone));
            assertThat(file).doesNotExist();
            assertThat(sidecar(file)).doesNotExist();
            assertThat(sidecar(lone)).doesNotExist();
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(sidecar(file));
            Files.deleteIfExists(sidecar(lone));
        }
    }

    @Test
    void aReceiveSegmentFileIsByteForByteTheSafetensorsFileItHoldsWhileItsOwnerLives()
            throws Exception {
        // A compat worker's receive segment is the file the engine's safetensors loader opens,
        // which refuses a single byte beyond the data its header covers.
        byte[] header =
                "{\"w\":{\"dtype\":\"U8\",\"shape\":[5],\"data_offsets\":[0,5]}}  "
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        ByteBuffer image =
                ByteBuffer.allocate(8 + header.length + 5).order(ByteOrder.LITTLE_ENDIAN);
        image.putLong(header.length).put(header).put(new byte[] {1, 2, 3, 4, 5});
        try (Dataplane dp =
                Dataplane.open(TestEngines.config("node-a", scope.prefix() + "compat:").build())) {
            Segment receive = dp.createReceiveSegment("model.safetensors", image.capacity());
            receive.byteBuffer().put(image.array());

            assertThat(Files.readAllBytes(receive.shmPath())).isEqualTo(image.array());
            assertThat(sidecar(receive.shmPath())).exists();
            assertThat(Dataplane.reclaimOrphanedSegmentFiles(SHM))
                    .as("its owner lives")
                    .noneMatch(r -> r.path().equals(receive.shmPath()));
            assertThat(Files.size(receive.shmPath())).isEqualTo(image.capacity());
        }
    }

    @Test
    void aKilledOwnersSuccessorTakesItsNameOverWithAFreshFile() throws Exception {
        String prefix = scope.prefix() + "restart:";
        ChildJvm first = owner(prefix, "store-f");
        Path file = files(first).get(0);
        Object firstInode = Files.getAttribute(file, "unix:ino");
        try {
            first.kill();
            ChildJvm second = owner(prefix, "store-f");
            assertThat(files(second)).containsExactly(file);
            assertThat(file).exists();
            assertThat(Files.getAttribute(file, "unix:ino")).isNotEqualTo(firstInode);
            second.close();
            assertThat(file).doesNotExist();
            assertThat(sidecar(file)).doesNotExist();
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(sidecar(file));
        }
    }
}
