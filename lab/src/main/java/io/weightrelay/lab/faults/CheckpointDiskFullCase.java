package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.api.control.client.model.CheckpointStatus;
import io.weightrelay.api.control.client.model.GcReport;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.lab.cluster.LabCluster;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.springframework.util.FileSystemUtils;
import org.springframework.web.client.RestClientResponseException;

/**
 * Issue 50, scenario 6: a checkpoint save runs out of disk. The case mounts a small tmpfs of its
 * own inside the checkpoint root ({@code relay.checkpoints.root}), saves the active generation into
 * it, fills the disk so that only half a generation fits, and saves the trainer's next generation
 * into the same directory: the owners' writes fail with ENOSPC part-way. The save fails with an
 * error naming the disk's path and the cause; the checkpoint that was there is untouched (its
 * marker and every file byte for byte), and restorable: once garbage collection has removed its
 * generation from the store, a restore from it brings the generation back. No generation is harmed;
 * once the space is freed, the same save succeeds and replaces the old checkpoint.
 */
final class CheckpointDiskFullCase {

    private CheckpointDiskFullCase() {}

    /** How long the case waits for the saved generation, retired, to be collected. */
    private static final Duration COLLECTED_WITHIN = Duration.ofSeconds(60);

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        long generationBytes = lab.manifest().totalBytes();
        // Room for two checkpoints and a half, so that only the filler makes the disk full.
        long diskBytes = roundUp(generationBytes * 5 / 2 + (1 << 20), 1 << 20);
        Path mount = Files.createTempDirectory(LabCluster.checkpointRoot(), "wr-checkpoint-disk-");
        try {
            mountTmpfs(mount, diskBytes);
            try {
                return fillDuringSave(fault, mount, generationBytes, diskBytes);
            } finally {
                unmount(mount);
            }
        } finally {
            FileSystemUtils.deleteRecursively(mount);
        }
    }

    private static String fillDuringSave(
            LabCase.Fault fault, Path mount, long generationBytes, long diskBytes)
            throws Exception {
        LabCluster lab = fault.lab();
        Path dir = Files.createDirectory(mount.resolve("checkpoint"));
        long saved = fault.active();
        CheckpointReport first = lab.checkpoint(saved, dir);
        check(
                first.getBytes() == generationBytes,
                "the first save wrote all of " + saved + ": " + first.getBytes());
        String marker = Files.readString(dir.resolve("COMPLETE"));
        Map<String, String> before = digests(dir);

        long next = fault.publish();
        LabCase.requireUpdated(lab, next, fault.ledger());

        // Leave half a generation free: the next save's owners run out of disk part-way.
        Path filler = mount.resolve("filler");
        long free = Files.getFileStore(mount).getUsableSpace();
        long fill = free - generationBytes / 2;
        check(fill > 0, "the disk of " + diskBytes + " bytes has " + free + " free");
        writeZeros(filler, fill);

        String refusal;
        try {
            lab.checkpoint(next, dir);
            throw new AssertionError(
                    "a save of "
                            + generationBytes
                            + " bytes succeeded on a disk with "
                            + Files.getFileStore(mount).getUsableSpace()
                            + " bytes free");
        } catch (RestClientResponseException e) {
            refusal = e.getStatusCode().value() + " " + e.getResponseBodyAsString();
        }
        check(
                refusal.contains("No space left on device") && refusal.contains(dir.toString()),
                "the failed save names the disk " + dir + " and why: " + refusal);

        // The checkpoint that was there is untouched, and still the one its directory names.
        check(
                marker.equals(Files.readString(dir.resolve("COMPLETE"))),
                "the completion marker of " + dir + " still names the save of " + saved);
        Map<String, String> after = digests(dir);
        after.remove("filler");
        check(
                before.equals(after),
                "the checkpoint of "
                        + saved
                        + " is byte for byte as saved: "
                        + before
                        + " -> "
                        + after);
        CheckpointStatus status = lab.checkpointStatus(saved);
        check(
                Boolean.TRUE.equals(status.getSaved())
                        && dir.toString().equals(status.getDirectory()),
                "generation " + saved + " is still saved in " + dir + ": " + status);
        LabCase.requireGeneration(
                lab, saved, GenerationState.RETIRED, next, "no generation is harmed");

        // Restorable: once collection removed the saved generation, the restore brings it back.
        int collections = collect(fault, saved);
        Generation restored = lab.restore(dir);
        check(
                restored.getGeneration() == saved && restored.getState() == GenerationState.RETIRED,
                "generation "
                        + saved
                        + " restored: "
                        + restored.getGeneration()
                        + " "
                        + restored.getState());
        LabCase.requireGeneration(
                lab, saved, GenerationState.RETIRED, next, "restored beside the active " + next);
        long restoredObjects = lab.faults().storedObjects(saved);
        check(restoredObjects > 0, "generation " + saved + " has its objects again");

        // Space freed: the save succeeds and replaces the old checkpoint.
        Files.delete(filler);
        CheckpointReport second = lab.checkpoint(next, dir);
        check(
                second.getBytes() == generationBytes
                        && second.getOwners().stream().allMatch(o -> o.getError() == null),
                "the save of " + next + " after space was freed: " + second);
        String replaced = Files.readString(dir.resolve("COMPLETE"));
        check(
                replaced.contains(" save:save-" + next + "-"),
                "the marker names the save of " + next + ": " + replaced);
        try (Stream<Path> entries = Files.list(dir)) {
            long saves =
                    entries.filter(p -> p.getFileName().toString().startsWith("save-")).count();
            check(saves == 1, "one save directory is left in " + dir + ", not " + saves);
        }
        return String.format(
                Locale.ROOT,
                "%d saved into a %d-byte tmpfs; the save of %d refused with half a generation free"
                        + " (%s); the checkpoint of %d intact (%d files), restored after %d"
                        + " collection(s) (%d objects); space freed, %d saved",
                saved,
                diskBytes,
                next,
                LabCase.firstLine(refusal),
                saved,
                before.size(),
                collections,
                restoredObjects,
                next);
    }

    /**
     * Collects garbage until {@code generation}, retired and held by nobody, is removed; returns
     * how many collections that took.
     */
    private static int collect(LabCase.Fault fault, long generation) throws InterruptedException {
        long deadline = System.nanoTime() + COLLECTED_WITHIN.toNanos();
        for (int n = 1; ; n++) {
            GcReport report = fault.lab().collectGarbageReport();
            if (report.getCollected() != null) {
                report.getCollected().forEach(fault::collected);
                if (report.getCollected().contains(generation)) {
                    return n;
                }
            }
            check(
                    System.nanoTime() < deadline,
                    "generation " + generation + " was not collected within " + COLLECTED_WITHIN);
            Thread.sleep(1_000);
        }
    }

    /** Every regular file under {@code dir}, relative, with the SHA-256 of its bytes. */
    private static Map<String, String> digests(Path dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                out.put(dir.relativize(f).toString(), sha256(f));
            }
        }
        return out;
    }

    private static String sha256(Path file) throws IOException {
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
        try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ)) {
            while (in.read(buffer) >= 0) {
                buffer.flip();
                digest.update(buffer);
                buffer.clear();
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    /** Writes {@code bytes} real bytes (tmpfs allocates only what is written). */
    private static void writeZeros(Path file, long bytes) throws IOException {
        ByteBuffer zeros = ByteBuffer.allocate(1 << 20);
        try (FileChannel out =
                FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long left = bytes;
            while (left > 0) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), left));
                left -= out.write(zeros);
            }
        }
    }

    private static long roundUp(long n, long unit) {
        return (n + unit - 1) / unit * unit;
    }

    /**
     * Mounts a tmpfs of {@code bytes} at {@code at}; a refused mount (not root, no mount namespace
     * rights) is an error saying the case cannot run here.
     */
    private static void mountTmpfs(Path at, long bytes) throws IOException, InterruptedException {
        String out =
                run(
                        "mount",
                        "-t",
                        "tmpfs",
                        "-o",
                        "size=" + bytes + ",mode=0700",
                        "tmpfs",
                        at.toString());
        if (out != null) {
            throw new IllegalStateException(
                    "cannot run here: mounting a "
                            + bytes
                            + "-byte tmpfs at "
                            + at
                            + " was refused (the case needs root): "
                            + out);
        }
    }

    private static void unmount(Path at) throws IOException, InterruptedException {
        String out = run("umount", at.toString());
        if (out != null) {
            // a service still holding a file there: detach now, freed when it lets go
            String lazy = run("umount", "-l", at.toString());
            if (lazy != null) {
                throw new IOException(
                        "cannot unmount the tmpfs at " + at + ": " + out + "; " + lazy);
            }
        }
    }

    /** Runs {@code command}; null when it exits 0, else its exit code and output. */
    private static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int code = p.waitFor();
        return code == 0 ? null : "exit " + code + ": " + output.strip();
    }
}
