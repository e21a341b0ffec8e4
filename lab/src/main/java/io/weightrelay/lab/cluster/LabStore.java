package io.weightrelay.lab.cluster;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ReclaimedSegmentFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * What the lab reads and changes behind its services' backs: the store's keys in Redis (counted, or
 * deleted when a run ends) and the segment files in {@code /dev/shm} (a byte flipped as a fault, or
 * files a killed process left reclaimed). Every key it touches is under one run's prefix, since
 * other runs share the Redis.
 */
public final class LabStore {

    private LabStore() {}

    /** The SCAN MATCH pattern of every key under {@code prefix}, its glob characters escaped. */
    private static String under(String prefix) {
        return prefix.replaceAll("([*?\\[\\]\\\\])", "\\\\$1") + "*";
    }

    /**
     * Deletes every key under {@code prefix} (SCAN MATCH {@code prefix*}, UNLINK a page at a time):
     * a lab's or a benchmark's own run prefix, never a wider one, since other runs share the Redis.
     * A failure is reported on stderr, not thrown.
     */
    public static void deleteKeys(String redisUri, String prefix) {
        RedisClient client = RedisClient.create(redisUri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            ScanArgs match = ScanArgs.Builder.matches(under(prefix)).limit(1000);
            KeyScanCursor<String> page = redis.scan(match);
            while (true) {
                if (!page.getKeys().isEmpty()) {
                    redis.unlink(page.getKeys().toArray(String[]::new));
                }
                if (page.isFinished()) {
                    break;
                }
                page = redis.scan(page, match);
            }
        } catch (RedisException e) {
            // Runs in close() and finally blocks: never hide the run's own outcome behind it.
            System.err.println("could not delete the Redis keys under " + prefix + ": " + e);
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    /** How many keys are under {@code prefix}: store objects, when it is a generation's. */
    static long countKeys(String redisUri, String prefix) {
        RedisClient client = RedisClient.create(redisUri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            ScanArgs args = ScanArgs.Builder.matches(under(prefix)).limit(1000);
            long n = 0;
            KeyScanCursor<String> page = redis.scan(args);
            while (true) {
                n += page.getKeys().size();
                if (page.isFinished()) {
                    return n;
                }
                page = redis.scan(page, args);
            }
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    /**
     * Flips one byte of a stored object right in its first replica's shared-memory file, as a bad
     * DIMM or a stray write would: the object directory and the checksum registered at publish stay
     * as they were. Returns the segment file written.
     *
     * @param dataplanePrefix the store's key prefix (segments and object directory)
     * @param key the object's store key ({@code model/generation/fragment})
     * @param objectOffset the byte of the object to flip
     */
    static Path corruptStoredByte(
            String redisUri, String dataplanePrefix, String key, long objectOffset)
            throws IOException {
        RedisClient client = RedisClient.create(redisUri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            String replicas = redis.hget(dataplanePrefix + "obj:" + key, "replicas");
            if (replicas == null) {
                throw new IllegalStateException("object " + key + " is not in the store");
            }
            String first = replicas.split(";")[0];
            String segment = first.substring(0, first.lastIndexOf('@'));
            long offset = Long.parseLong(first.substring(first.lastIndexOf('@') + 1));
            String shm = redis.hget(dataplanePrefix + "seg:" + segment, "shm");
            if (shm == null) {
                throw new IllegalStateException("segment " + segment + " has no descriptor");
            }
            Path file = Path.of(shm);
            flipByte(file, offset + objectOffset);
            return file;
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    private static void flipByte(Path file, long at) throws IOException {
        try (FileChannel ch =
                FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            if (ch.read(one, at) != 1) {
                throw new IOException("cannot read byte " + at + " of " + file);
            }
            one.put(0, (byte) (one.get(0) ^ 0x5a));
            one.rewind();
            if (ch.write(one, at) != 1) {
                throw new IOException("cannot write byte " + at + " of " + file);
            }
        }
    }

    /**
     * Removes the segment files in {@code /dev/shm} whose owner process is gone (whichever run or
     * lab made them; never a live process's) and says so on stderr, with {@code why}.
     */
    static void reclaimOrphanedSegmentFiles(String why) {
        List<ReclaimedSegmentFile> reclaimed =
                Dataplane.reclaimOrphanedSegmentFiles(Path.of("/dev/shm"));
        if (!reclaimed.isEmpty()) {
            long bytes = reclaimed.stream().mapToLong(ReclaimedSegmentFile::bytes).sum();
            System.err.printf(
                    Locale.ROOT,
                    "lab: reclaimed %d segment file(s), %.1f MiB of /dev/shm, %s%n",
                    reclaimed.size(),
                    bytes / (double) (1 << 20),
                    why);
        }
    }

    /**
     * Every file in {@code /dev/shm} whose name holds {@code run} (a lab run's services made it).
     */
    static List<Path> shmFiles(String run) throws IOException {
        try (var files = Files.list(Path.of("/dev/shm"))) {
            return files.filter(f -> f.getFileName().toString().contains(run)).toList();
        }
    }
}
