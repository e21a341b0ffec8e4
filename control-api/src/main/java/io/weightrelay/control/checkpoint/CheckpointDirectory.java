package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointManifest;
import io.weightrelay.api.control.model.CheckpointObject;
import io.weightrelay.service.files.DirectoryFiles;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.UUID;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

/**
 * A checkpoint directory is self-contained, and always holds at most one checkpoint that a restore
 * trusts. Each save writes into a fresh directory of its own inside it, {@code save-<generation>-
 * <random>/}: one file per owner ({@code <segment>.bin}, written and fsynced by the owner) and
 * {@code checkpoint.json} (a {@link CheckpointManifest}: the source manifest and digest, the
 * generation's record, every object with its size, registered checksum, file and offset, files
 * named relative to the checkpoint directory). Once every owner has fsynced, the completion marker
 * {@code COMPLETE} of the checkpoint directory is replaced in one atomic rename: it names the save
 * and holds the SHA-256 of its {@code checkpoint.json}. Only then is the previous save removed. So
 * a save that fails (an owner failing, a full disk, an I/O error, control-api dying) never touches
 * the checkpoint the marker vouches for.
 *
 * <p>Every directory is confined to {@code relay.checkpoints.root} ({@link #confined}). This class
 * reads and writes the two files control-api owns.
 */
@Component
class CheckpointDirectory {

    private static final Logger log = LoggerFactory.getLogger(CheckpointDirectory.class);

    static final String FORMAT = "wr.checkpoint.v1";
    static final String MANIFEST = "checkpoint.json";
    static final String MARKER = "COMPLETE";

    /** What a marker may name: a save directory, one plain name. */
    private static final Pattern SAVE_NAME = Pattern.compile("save-[0-9]+-[0-9a-f]{12}");

    private final JsonMapper json;
    private final CheckpointProperties properties;

    CheckpointDirectory(JsonMapper json, CheckpointProperties properties) {
        this.json = json;
        this.properties = properties;
    }

    /** A save in progress: its fresh directory {@code id} inside the checkpoint directory. */
    record Save(Path directory, String id) {
        /** Where this save's files go (what the owners are told). */
        Path files() {
            return directory.resolve(id);
        }

        /** A file of this save, named as the manifest names it (relative to the directory). */
        String name(String file) {
            return id + "/" + file;
        }
    }

    /**
     * The checkpoint directory {@code directory} names: an absolute path inside {@code
     * relay.checkpoints.root} (or the root itself), with no {@code .} or {@code ..} element, and no
     * symbolic link between the root and it (a link an operator or owner could point anywhere).
     * Anything else is 400 {@code checkpoint-directory-refused}, naming the path.
     */
    Path confined(String directory) {
        Path root = properties.root();
        if (root == null) {
            throw refused(
                    directory,
                    "no checkpoint root is configured (relay.checkpoints.root): checkpoints are"
                            + " off");
        }
        Path dir;
        try {
            dir = Path.of(directory);
        } catch (InvalidPathException e) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "checkpoint directory is not a path here: " + e.getReason());
        }
        if (!dir.isAbsolute()) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "checkpoint directory '" + directory + "' is not absolute");
        }
        for (Path element : dir) {
            String name = element.toString();
            if (name.equals("..") || name.equals(".")) {
                throw refused(directory, "it names '" + name + "'");
            }
        }
        dir = dir.normalize();
        if (!dir.startsWith(root)) {
            throw refused(directory, "it is not inside the checkpoint root " + root);
        }
        Path at = root;
        for (Path element : root.relativize(dir)) {
            at = at.resolve(element);
            if (Files.isSymbolicLink(at)) {
                throw refused(directory, at + " is a symbolic link");
            }
            if (Files.exists(at, LinkOption.NOFOLLOW_LINKS)
                    && !Files.isDirectory(at, LinkOption.NOFOLLOW_LINKS)) {
                throw refused(directory, at + " is not a directory");
            }
        }
        return dir;
    }

    private static RuntimeException refused(String directory, String why) {
        return CheckpointProblems.CHECKPOINT_DIRECTORY_REFUSED
                .exception("checkpoint directory '" + directory + "' is refused: " + why)
                .with("directory", directory);
    }

    /** Makes the checkpoint directory if needed and a fresh save directory inside it. */
    Save begin(Path dir, long generation) {
        String id =
                "save-"
                        + generation
                        + "-"
                        + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try {
            Files.createDirectories(dir);
            Files.createDirectory(dir.resolve(id));
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_FAILED
                    .exception("cannot prepare checkpoint directory " + dir + ": " + e)
                    .with("directory", dir.toString());
        }
        return new Save(dir, id);
    }

    /**
     * Writes the save's manifest, then swaps the marker to vouch for exactly it, then removes the
     * save the marker vouched for before.
     */
    void complete(Save save, CheckpointManifest manifest) {
        byte[] manifestBytes = json.writeValueAsBytes(manifest);
        Path dir = save.directory();
        String previous = previousSave(dir);
        try {
            writeDurably(save.files(), MANIFEST, manifestBytes);
            // Last: the marker vouches for exactly this manifest, after every owner fsynced.
            writeDurably(
                    dir,
                    MARKER,
                    (FORMAT + " sha256:" + sha256(manifestBytes) + " save:" + save.id() + "\n")
                            .getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_FAILED
                    .exception(
                            "cannot write the checkpoint manifest into " + save.files() + ": " + e)
                    .with("directory", dir.toString());
        }
        removePrevious(dir, previous, save.id());
    }

    /** Removes what a failed save wrote; the checkpoint the marker vouches for stays. */
    void abandon(Save save) {
        try {
            deleteTree(save.files());
        } catch (IOException e) {
            log.warn("cannot remove the failed save {}: {}", save.files(), e.toString());
        }
    }

    /** The save the marker of {@code dir} names now ("" for a checkpoint of the older layout). */
    private static String previousSave(Path dir) {
        try {
            String marker = Files.readString(dir.resolve(MARKER), StandardCharsets.US_ASCII).trim();
            int at = marker.indexOf(" save:");
            return at < 0 ? "" : marker.substring(at + 6);
        } catch (IOException e) {
            return null; // no checkpoint before this one
        }
    }

    private void removePrevious(Path dir, String previous, String current) {
        if (previous == null || previous.equals(current)) {
            return;
        }
        try {
            if (SAVE_NAME.matcher(previous).matches()) {
                deleteTree(dir.resolve(previous));
            } else if (previous.isEmpty()) {
                // The older layout: owner files and the manifest at the top.
                Path legacy = dir.resolve(MANIFEST);
                CheckpointManifest m =
                        json.readValue(Files.readAllBytes(legacy), CheckpointManifest.class);
                for (CheckpointObject o : m.getObjects()) {
                    if (o.getFile() != null
                            && !o.getFile().contains("/")
                            && !o.getFile().startsWith(".")) {
                        Files.deleteIfExists(dir.resolve(o.getFile()));
                    }
                }
                Files.deleteIfExists(legacy);
            }
        } catch (IOException | RuntimeException e) {
            log.warn("cannot remove the previous checkpoint in {}: {}", dir, e.toString());
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
        String vouched = new String(marker, StandardCharsets.US_ASCII).trim();
        int at = vouched.indexOf(" save:");
        Path manifestFile = dir.resolve(MANIFEST);
        if (at >= 0) {
            String save = vouched.substring(at + 6);
            if (!SAVE_NAME.matcher(save).matches()) {
                throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                        "the completion marker in "
                                + dir
                                + " names no save directory ('"
                                + save
                                + "')");
            }
            manifestFile = dir.resolve(save).resolve(MANIFEST);
            vouched = vouched.substring(0, at);
        }
        try {
            manifest = Files.readAllBytes(manifestFile);
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "cannot read " + manifestFile + ": " + e);
        }
        String expected = FORMAT + " sha256:" + sha256(manifest);
        if (!vouched.equals(expected)) {
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
                    "cannot parse " + manifestFile + ": " + e.getMessage());
        }
        if (!FORMAT.equals(m.getFormat())) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "checkpoint format " + m.getFormat() + " is not " + FORMAT);
        }
        for (CheckpointObject o : m.getObjects()) {
            if (!DirectoryFiles.staysInside(o.getFile())) {
                throw misplaced(dir, o, "not a file inside it");
            }
        }
        return m;
    }

    /**
     * The checkpoint in {@code dir} is unusable because its manifest places {@code o} where it
     * cannot be ({@code where}): one refusal, naming the object, for every such placement.
     */
    static RelayException misplaced(Path dir, CheckpointObject o, String where) {
        return CheckpointProblems.CHECKPOINT_INCOMPLETE
                .exception(
                        "the checkpoint in "
                                + dir
                                + " places object "
                                + o.getKey()
                                + " in '"
                                + o.getFile()
                                + "', "
                                + where)
                .with("object", o.getKey());
    }

    /** Writes {@code name} in {@code dir} through a temporary file, fsynced, then the directory. */
    private static void writeDurably(Path dir, String name, byte[] bytes) throws IOException {
        Path tmp = dir.resolve(name + "." + UUID.randomUUID() + ".tmp");
        try {
            try (FileChannel out =
                    FileChannel.open(
                            tmp,
                            StandardOpenOption.CREATE_NEW,
                            StandardOpenOption.WRITE,
                            LinkOption.NOFOLLOW_LINKS)) {
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
        } finally {
            Files.deleteIfExists(tmp);
        }
        DirectoryFiles.sync(dir);
    }

    /** Deletes a directory tree; symbolic links inside are removed, never followed. */
    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Files.walkFileTree(
                root,
                new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                            throws IOException {
                        Files.delete(file);
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult postVisitDirectory(Path d, IOException e)
                            throws IOException {
                        if (e != null) {
                            throw e;
                        }
                        Files.delete(d);
                        return FileVisitResult.CONTINUE;
                    }
                });
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
