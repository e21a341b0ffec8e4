package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointManifest;
import io.weightrelay.service.problem.CommonProblems;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

/**
 * A checkpoint directory is self-contained: one file per owner ({@code <segment>.bin}, written and
 * fsynced by the owner), {@code checkpoint.json} (a {@link CheckpointManifest}: the source manifest
 * and digest, the generation's record, every object with its size, registered checksum, file and
 * offset) and, written last once every owner has fsynced, the completion marker {@code COMPLETE}
 * holding the SHA-256 of {@code checkpoint.json}. This class reads and writes the two files
 * control-api owns.
 */
@Component
class CheckpointDirectory {

    static final String FORMAT = "wr.checkpoint.v1";
    static final String MANIFEST = "checkpoint.json";
    static final String MARKER = "COMPLETE";

    private final JsonMapper json;

    CheckpointDirectory(JsonMapper json) {
        this.json = json;
    }

    /**
     * Makes a directory that held a checkpoint unusable before a save into it: no marker vouches
     * for a mix of old and new files.
     */
    void clear(Path dir) {
        try {
            Files.createDirectories(dir);
            Files.deleteIfExists(dir.resolve(MARKER));
            Files.deleteIfExists(dir.resolve(MANIFEST));
        } catch (IOException e) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "cannot prepare checkpoint directory " + dir + ": " + e);
        }
    }

    /** Writes the manifest, then the marker that vouches for exactly it. */
    void complete(Path dir, CheckpointManifest manifest) {
        byte[] manifestBytes = json.writeValueAsBytes(manifest);
        try {
            writeDurably(dir, MANIFEST, manifestBytes);
            // Last: the marker vouches for exactly this manifest, after every owner fsynced.
            writeDurably(
                    dir,
                    MARKER,
                    (FORMAT + " sha256:" + sha256(manifestBytes) + "\n")
                            .getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_FAILED.exception(
                    "cannot write the checkpoint manifest into " + dir + ": " + e);
        }
    }

    /** The checkpoint manifest of a directory, only if the completion marker vouches for it. */
    CheckpointManifest read(Path dir) {
        byte[] marker;
        byte[] manifest;
        try {
            marker = Files.readAllBytes(dir.resolve(MARKER));
        } catch (NoSuchFileException e) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE
                    .exception(
                            "no completion marker in "
                                    + dir
                                    + ": no save into it finished, it cannot be restored")
                    .with("directory", dir.toString());
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "cannot read " + dir.resolve(MARKER) + ": " + e);
        }
        try {
            manifest = Files.readAllBytes(dir.resolve(MANIFEST));
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "cannot read " + dir.resolve(MANIFEST) + ": " + e);
        }
        String expected = FORMAT + " sha256:" + sha256(manifest);
        if (!new String(marker, StandardCharsets.US_ASCII).trim().equals(expected)) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "the completion marker in "
                            + dir
                            + " does not vouch for its "
                            + MANIFEST
                            + " (changed after the save)");
        }
        CheckpointManifest m;
        try {
            m = json.readValue(manifest, CheckpointManifest.class);
        } catch (RuntimeException e) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "cannot parse " + dir.resolve(MANIFEST) + ": " + e.getMessage());
        }
        if (!FORMAT.equals(m.getFormat())) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "checkpoint format " + m.getFormat() + " is not " + FORMAT);
        }
        return m;
    }

    static Path absolute(String directory) {
        Path dir;
        try {
            dir = Path.of(directory).normalize();
        } catch (java.nio.file.InvalidPathException e) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "checkpoint directory is not a path here: " + e.getReason());
        }
        if (!dir.isAbsolute()) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "checkpoint directory '" + directory + "' is not absolute");
        }
        return dir;
    }

    /** Writes {@code name} in {@code dir} through a temporary file, fsynced, then the directory. */
    private static void writeDurably(Path dir, String name, byte[] bytes) throws IOException {
        Path tmp = dir.resolve(name + ".tmp");
        try (FileChannel out =
                FileChannel.open(
                        tmp,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.TRUNCATE_EXISTING,
                        StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                out.write(b);
            }
            out.force(true);
        }
        try {
            Files.move(
                    tmp,
                    dir.resolve(name),
                    StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, dir.resolve(name), StandardCopyOption.REPLACE_EXISTING);
        }
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
