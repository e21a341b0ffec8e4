package io.weightrelay.dataplane;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The proof that a Mooncake data plane lives: a file {@code <shmDir>/wr-mc-<instance>.lock} whose
 * lock its JVM holds from open to close. The kernel drops the lock when that JVM ends, {@code kill
 * -9} included (and its agent follows within half a second: it watches its parent), so a data plane
 * on the same host, seeing the same shm directory, can tell a dead owner from a live one without
 * asking the owner anything: the lock free, or the file gone, means the owner is gone. The owner's
 * receive segment files are named {@code wr-mc-<instance>-...}, so a dead owner's files can be
 * found and removed ({@link #reclaimOrphans}).
 *
 * <p>The lock is a POSIX record lock ({@link FileChannel#lock}): it belongs to the process, and
 * closing <em>any</em> descriptor of the file in the process drops it. So this JVM never opens the
 * file of an owner it holds itself: {@link #HELD} answers for those. Thread safe.
 */
final class MooncakeOwnerLock implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MooncakeOwnerLock.class.getName());
    static final String PREFIX = "wr-mc-";

    /**
     * Not {@code .owner}: the built-in engine's sweep takes a {@code wr-*.owner} file for its own
     * sidecar (an flock, which a POSIX record lock does not hold) and would remove a live owner's.
     */
    private static final String SUFFIX = ".lock";

    private static final Pattern OWNER_FILE =
            Pattern.compile(
                    Pattern.quote(PREFIX)
                            + "([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                            + Pattern.quote(SUFFIX));

    /** The owner files this JVM holds the lock of (absolute, normalized). */
    private static final Set<Path> HELD = ConcurrentHashMap.newKeySet();

    private final Path file;
    private final FileChannel channel;
    private final FileLock lock;
    private boolean closed;

    private MooncakeOwnerLock(Path file, FileChannel channel, FileLock lock) {
        this.file = file;
        this.channel = channel;
        this.lock = lock;
    }

    /** Makes and locks the owner file of {@code instance} (a random UUID: the file is new). */
    static MooncakeOwnerLock acquire(Path shmDir, String instance) {
        Path file = ownerFile(shmDir, instance);
        FileChannel channel = null;
        try {
            channel =
                    FileChannel.open(
                            file,
                            StandardOpenOption.CREATE_NEW,
                            StandardOpenOption.WRITE,
                            StandardOpenOption.READ);
            FileLock lock = channel.lock();
            HELD.add(file);
            return new MooncakeOwnerLock(file, channel, lock);
        } catch (IOException e) {
            if (channel != null) {
                try {
                    channel.close();
                    Files.deleteIfExists(file);
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw new DataplaneException(
                    DataplaneError.IO, "cannot make the owner lock " + file + ": " + e, e);
        }
    }

    /** The name a receive segment file of {@code instance} gets for {@code suffix}. */
    static String segmentFileName(String instance, String suffix) {
        return PREFIX + instance + "-" + suffix;
    }

    private static Path ownerFile(Path shmDir, String instance) {
        return shmDir.toAbsolutePath().normalize().resolve(PREFIX + instance + SUFFIX);
    }

    /**
     * Whether the data plane {@code instance}, which made its owner file in {@code shmDir}, is
     * gone: its file is missing (it closed, or a dead owner's files were reclaimed) or nobody holds
     * its lock. Its leftover files go with it ({@link #reclaimOrphans}). An answer of {@code false}
     * means alive, or not provably gone (the file cannot be opened).
     */
    static boolean isGone(Path shmDir, String instance) {
        Path file = ownerFile(shmDir, instance);
        if (HELD.contains(file)) {
            return false;
        }
        if (!Files.exists(file)) {
            return true;
        }
        return reclaim(shmDir, file, instance, new ArrayList<>());
    }

    /**
     * Removes the owner file and the receive segment files of every data plane whose owner file in
     * {@code shmDir} nobody locks: each such owner died (a clean close removes its files itself).
     * Files without an owner file (older names, other programs) are never touched.
     */
    static List<ReclaimedSegmentFile> reclaimOrphans(Path shmDir) {
        Path dir = shmDir.toAbsolutePath().normalize();
        List<Path> owners;
        try (var files = Files.list(dir)) {
            owners =
                    files.filter(f -> OWNER_FILE.matcher(f.getFileName().toString()).matches())
                            .toList();
        } catch (IOException | UncheckedIOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot list " + dir + " for owner files: " + e);
            return List.of();
        }
        List<ReclaimedSegmentFile> reclaimed = new ArrayList<>();
        for (Path owner : owners) {
            Matcher m = OWNER_FILE.matcher(owner.getFileName().toString());
            if (m.matches() && !HELD.contains(owner)) {
                reclaim(dir, owner, m.group(1), reclaimed);
            }
        }
        return List.copyOf(reclaimed);
    }

    /**
     * Takes the lock of {@code owner} if nobody holds it and then removes the instance's files
     * (segment files first, the owner file last, still under the lock); true when the owner is
     * gone.
     */
    private static boolean reclaim(
            Path dir, Path owner, String instance, List<ReclaimedSegmentFile> reclaimed) {
        try (FileChannel channel =
                FileChannel.open(owner, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            FileLock lock;
            try {
                lock = channel.tryLock();
            } catch (OverlappingFileLockException e) {
                return false; // another thread of this JVM is reclaiming it right now
            }
            if (lock == null) {
                return false; // its owner holds it: alive
            }
            String prefix = PREFIX + instance + "-";
            try (var files = Files.list(dir)) {
                for (Path f :
                        files.filter(f -> f.getFileName().toString().startsWith(prefix)).toList()) {
                    long bytes;
                    try {
                        bytes = Files.size(f);
                    } catch (NoSuchFileException gone) {
                        continue;
                    }
                    if (Files.deleteIfExists(f)) {
                        reclaimed.add(new ReclaimedSegmentFile(f, bytes));
                        LOG.log(
                                System.Logger.Level.INFO,
                                "reclaimed Mooncake segment file "
                                        + f
                                        + " ("
                                        + bytes
                                        + " bytes): its owner process is gone");
                    }
                }
            }
            Files.deleteIfExists(owner);
            return true;
        } catch (NoSuchFileException e) {
            return true; // removed meanwhile: by its owner's close or another reclaimer
        } catch (IOException | UncheckedIOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot reclaim " + owner + ": " + e);
            return false;
        }
    }

    /** Releases the lock and removes the owner file (its segment files are removed before). */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "removing " + file + ": " + e);
        } finally {
            HELD.remove(file);
            try {
                lock.release();
                channel.close();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "releasing " + file + ": " + e);
            }
        }
    }
}
