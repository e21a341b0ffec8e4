package io.weightrelay.lab.bench;

import static java.nio.file.StandardOpenOption.CREATE;
import static java.nio.file.StandardOpenOption.TRUNCATE_EXISTING;
import static java.nio.file.StandardOpenOption.WRITE;

import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.placement.Mode;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.springframework.util.FileSystemUtils;

/**
 * {@code ./relay bench checkpoint --model qwen2.5-0.5b}: starts the lab (control-api, one publisher
 * per trainer node, one loader), publishes one generation, saves it through its segment owners,
 * writes the same number of bytes with one plain sequential write plus fsync into the same
 * directory (the disk's figure in the same run), then restarts everything from scratch (services
 * stopped, the run's Redis keys and shared memory gone), restores the generation from the directory
 * alone and has a rollout engine load it, verifying every byte. Prints one JSON line:
 *
 * <ul>
 *   <li>{@code bytes}, {@code owners}: what was saved, by how many segment owners
 *   <li>{@code save_s}: the whole save as the operator waits for it (owners, manifest, marker);
 *       {@code save_mean_owner_s}, {@code save_worst_owner_s}: per owner
 *   <li>{@code disk_write_gbps}: the plain write + fsync, GB/s (10^9 bytes); {@code save_gbps};
 *       {@code save_vs_disk}: their ratio (the target is at least 0.6)
 *   <li>{@code restore_s}: the restore call into the empty cluster; {@code restore_verified}: the
 *       engine loaded the restored generation and every byte matched
 *   <li>{@code load_avg}: the machine's load, which these figures follow
 * </ul>
 *
 * The flags and their defaults: {@code ./relay bench checkpoint --help} ({@link Options}).
 */
public final class CheckpointBench {

    private CheckpointBench() {}

    /**
     * {@code ./relay bench checkpoint}'s flags, as its {@code --help} describes them; {@code dir}
     * null: a fresh temporary directory.
     */
    public record Options(String model, int trainerNodes, Path dir, long seed, Path root) {}

    /** {@code ./relay bench checkpoint}: prints the bench's JSON line. */
    public static void run(Options options) throws Exception {
        Path base =
                options.dir() != null
                        ? Files.createDirectories(options.dir().toAbsolutePath())
                        : Files.createTempDirectory("wr-bench-checkpoint");
        Path dir = base.resolve("checkpoint");
        // control-api confines checkpoints to a root: this bench's own directory.
        System.setProperty("wr.lab.checkpoint-root", base.toString());
        LabCluster.Spec spec =
                new LabCluster.Spec(
                        options.model(),
                        1,
                        1,
                        Mode.COMPAT,
                        options.seed(),
                        options.trainerNodes(),
                        1,
                        BenchServices.site(options.root()),
                        LabCluster.Serving.TENSOR_PARALLEL);
        try (LabCluster lab = LabCluster.start(spec)) {
            lab.showingLogsOnFailure(
                    () -> {
                        long g = lab.publish(1);
                        long started = System.nanoTime();
                        CheckpointReport report = lab.checkpoint(g, dir);
                        double save = (System.nanoTime() - started) / 1e9;
                        long bytes = report.getBytes();
                        double disk = diskWriteSeconds(base.resolve("disk-baseline.bin"), bytes);

                        lab.faults().restartFromScratch();
                        started = System.nanoTime();
                        Generation restored = lab.restore(dir);
                        double restore = (System.nanoTime() - started) / 1e9;
                        lab.updateAll().requireUpdated();
                        boolean verified = restored.getGeneration() == g && lab.verifyAll(g) > 0;

                        double saveGbps = bytes / save / 1e9;
                        double diskGbps = bytes / disk / 1e9;
                        System.out.println(
                                String.format(
                                        Locale.ROOT,
                                        "{\"bench\":\"checkpoint\",\"model\":\"%s\",\"bytes\":%d,"
                                                + "\"owners\":%d,\"save_s\":%.3f,\"restore_s\":%.3f,"
                                                + "\"save_mean_owner_s\":%.3f,\"save_worst_owner_s\":%.3f,"
                                                + "\"disk_write_gbps\":%.3f,\"save_gbps\":%.3f,"
                                                + "\"save_vs_disk\":%.3f,\"restore_verified\":%s,"
                                                + "\"load_avg\":%.1f}",
                                        spec.model(),
                                        bytes,
                                        report.getOwners().size(),
                                        save,
                                        restore,
                                        report.getMeanSeconds(),
                                        report.getWorstSeconds(),
                                        diskGbps,
                                        saveGbps,
                                        saveGbps / diskGbps,
                                        verified,
                                        ManagementFactory.getOperatingSystemMXBean()
                                                .getSystemLoadAverage()));
                    });
        } finally {
            FileSystemUtils.deleteRecursively(base);
        }
    }

    /**
     * One plain sequential write of {@code bytes} bytes (8 MiB direct buffer, non-zero contents)
     * plus fsync, as the disk's figure for the same bytes in the same directory; the file is
     * removed after.
     */
    static double diskWriteSeconds(Path file, long bytes) throws IOException {
        ByteBuffer chunk = ByteBuffer.allocateDirect(8 << 20);
        for (int i = 0; i < chunk.capacity(); i++) {
            chunk.put(i, (byte) (i * 31 + 7));
        }
        long started = System.nanoTime();
        try (FileChannel out = FileChannel.open(file, CREATE, TRUNCATE_EXISTING, WRITE)) {
            long left = bytes;
            while (left > 0) {
                chunk.clear();
                chunk.limit((int) Math.min(chunk.capacity(), left));
                while (chunk.hasRemaining()) {
                    left -= out.write(chunk);
                }
            }
            out.force(true);
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        Files.deleteIfExists(file);
        return seconds;
    }
}
