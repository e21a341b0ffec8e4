package io.weightrelay.loader.registration;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The weights a staged direct worker's engine serves from: one shared-memory file beside each of
 * its receive segments ({@code <segment file>.serving}, the same size). Peers write a new
 * generation into the receive segment while the engine serves from this copy; the install copies
 * the segment into it, locally, once the whole group fetched and verified. It lives and dies with
 * its receive segment.
 */
public final class ServingCopies {
    /** Copied in pieces: a mapping holds at most 2 GiB. */
    private static final int CHUNK = 64 << 20;

    /** The copies this process made and has not removed: removed with its data plane. */
    private static final Set<Path> MADE = ConcurrentHashMap.newKeySet();

    private ServingCopies() {}

    /** The serving copy of the receive segment in {@code segmentFile}. */
    public static Path of(Path segmentFile) {
        return segmentFile.resolveSibling(segmentFile.getFileName() + ".serving");
    }

    /**
     * Creates the serving copy of {@code segmentFile} ({@code size} bytes) if it is missing, and
     * touches every page of it so the install pays no page faults.
     */
    public static void create(Path segmentFile, long size) {
        Path copy = of(segmentFile);
        MADE.add(copy);
        try (FileChannel out =
                FileChannel.open(
                        copy,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
            if (out.size() == size) {
                return;
            }
            out.truncate(0);
            for (long at = 0; at < size; at += CHUNK) {
                int length = (int) Math.min(CHUNK, size - at);
                MappedByteBuffer view = out.map(FileChannel.MapMode.READ_WRITE, at, length);
                for (int page = 0; page < length; page += 4096) {
                    view.put(page, (byte) 0);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("creating the serving copy " + copy + " failed", e);
        }
    }

    /**
     * Copies the first {@code size} bytes of {@code segmentFile} into its serving copy (created
     * first when missing): the install of a staged worker.
     *
     * @return the bytes copied
     */
    public static long install(Path segmentFile, long size) {
        create(segmentFile, size);
        try (FileChannel in = FileChannel.open(segmentFile, StandardOpenOption.READ);
                FileChannel out =
                        FileChannel.open(
                                of(segmentFile),
                                StandardOpenOption.READ,
                                StandardOpenOption.WRITE)) {
            for (long at = 0; at < size; at += CHUNK) {
                int length = (int) Math.min(CHUNK, size - at);
                MappedByteBuffer from = in.map(FileChannel.MapMode.READ_ONLY, at, length);
                MappedByteBuffer to = out.map(FileChannel.MapMode.READ_WRITE, at, length);
                to.put(from);
            }
            return size;
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "installing " + segmentFile + " into its serving copy failed", e);
        }
    }

    /** Removes the serving copy of {@code segmentFile}, if any. */
    public static void delete(Path segmentFile) {
        if (segmentFile == null) {
            return;
        }
        Path copy = of(segmentFile);
        try {
            Files.deleteIfExists(copy);
            MADE.remove(copy);
        } catch (IOException e) {
            throw new UncheckedIOException("removing the serving copy of " + segmentFile, e);
        }
    }

    /**
     * Removes every serving copy this process made and still holds: a loader that shuts down leaves
     * no file in shared memory, as its data plane removes its receive segments' files. (A loader
     * killed with SIGKILL still leaves them, as it leaves its segment files.)
     *
     * @return the copies that could not be removed, with why
     */
    public static List<String> deleteAll() {
        List<String> failed = new java.util.ArrayList<>();
        for (Path copy : List.copyOf(MADE)) {
            try {
                Files.deleteIfExists(copy);
                MADE.remove(copy);
            } catch (IOException e) {
                failed.add(copy + ": " + e);
            }
        }
        return failed;
    }
}
