package io.weightrelay.publisher.checkpoint;

import io.weightrelay.api.publisher.model.OwnerCheckpointResult;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.publisher.publish.GenerationLayout;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Saves the objects of a generation held by this segment under {@code
 * <directory>/<segment>/<model>/<generation>/} (one file per object plus {@code index.tsv} with
 * key, size and checksum), and restores them into the store. Thread safe (stateless).
 */
public final class OwnerCheckpoints {

    private static final String INDEX = "index.tsv";

    private final SegmentOwner owner;
    private final StagingArea staging;
    private final ControlPlane control;

    public OwnerCheckpoints(SegmentOwner owner, StagingArea staging, ControlPlane control) {
        this.owner = owner;
        this.staging = staging;
        this.control = control;
    }

    /**
     * Writes every object of the generation that this segment holds, each only if its bytes match
     * the checksum registered at publish ({@code published}, by store key): a byte changed in the
     * segment since is never saved as if it were the trainer's.
     */
    public OwnerCheckpointResult save(
            String model, long generation, Path directory, Map<String, String> published) {
        if (published == null || published.isEmpty()) {
            throw CheckpointProblems.CHECKSUMS_REQUIRED.exception(
                    "a save of "
                            + model
                            + "/"
                            + generation
                            + " needs the checksums registered at publish (checksums)");
        }
        long started = System.nanoTime();
        GenerationLayout layout = control.layout(model, generation);
        Path dir = folder(directory, model, generation);
        List<String> index = new ArrayList<>();
        long bytes = 0;
        try {
            Files.createDirectories(dir);
            int n = 0;
            for (GenerationLayout.Tensor tensor : layout.tensors().values()) {
                for (GenerationLayout.Fragment f : tensor.fragments()) {
                    var held = owner.ownedBytes(f.key());
                    if (held.isEmpty()) {
                        continue;
                    }
                    ByteBuffer view = held.get();
                    int crc = Checksums.crc32c(view);
                    String expected = published.get(f.key());
                    if (expected == null) {
                        throw CheckpointProblems.refused(
                                f.key(), "no checksum was registered for it");
                    }
                    if (crc != Checksums.parse(expected)) {
                        throw CheckpointProblems.refused(
                                f.key(),
                                "its bytes in segment "
                                        + owner.segmentName()
                                        + " have "
                                        + Checksums.format(crc)
                                        + ", published "
                                        + expected);
                    }
                    String file = (n++) + ".bin";
                    try (FileChannel out =
                            FileChannel.open(
                                    dir.resolve(file),
                                    StandardOpenOption.CREATE,
                                    StandardOpenOption.TRUNCATE_EXISTING,
                                    StandardOpenOption.WRITE)) {
                        while (view.hasRemaining()) {
                            out.write(view);
                        }
                    }
                    bytes += view.capacity();
                    index.add(
                            f.key()
                                    + "\t"
                                    + file
                                    + "\t"
                                    + view.capacity()
                                    + "\t"
                                    + Checksums.format(crc));
                }
            }
            Files.write(dir.resolve(INDEX), index, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_IO.exception(
                    "cannot save into " + dir + ": " + e, e);
        }
        return result(index.size(), bytes, started);
    }

    /** Puts the saved objects back (objects already stored are left alone). */
    public OwnerCheckpointResult restore(String model, long generation, Path directory) {
        long started = System.nanoTime();
        Path dir = folder(directory, model, generation);
        List<String> index;
        try {
            index = Files.readAllLines(dir.resolve(INDEX), StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw CheckpointProblems.CHECKPOINT_NOT_FOUND.exception(
                    "no checkpoint of segment " + owner.segmentName() + " in " + dir);
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_IO.exception("cannot read " + dir + ": " + e, e);
        }
        long objects = 0;
        long bytes = 0;
        for (String line : index) {
            String[] parts = line.split("\t");
            String key = parts[0];
            long size = Long.parseLong(parts[2]);
            if (owner.exists(key)) {
                continue;
            }
            StagingArea.Reservation r = staging.reserve(size);
            try {
                ByteBuffer target = staging.bytes(r.offset(), Math.toIntExact(size));
                try (FileChannel in = FileChannel.open(dir.resolve(parts[1]))) {
                    while (target.hasRemaining() && in.read(target) >= 0) {
                        // read fully
                    }
                }
                target.flip();
                if (Checksums.crc32c(target) != Checksums.parse(parts[3])) {
                    throw CheckpointProblems.CHECKPOINT_IO.exception(
                            "saved object " + key + " does not match its checksum");
                }
                staging.store(
                        staging.claim(r.id()),
                        List.of(new StagingArea.Piece(key, r.offset(), size)),
                        Runnable::run);
                objects++;
                bytes += size;
            } catch (IOException e) {
                throw CheckpointProblems.CHECKPOINT_IO.exception(
                        "cannot restore " + key + ": " + e, e);
            } finally {
                staging.free(r);
            }
        }
        return result(objects, bytes, started);
    }

    private Path folder(Path directory, String model, long generation) {
        return directory
                .resolve(owner.segmentName())
                .resolve(model)
                .resolve(Long.toString(generation));
    }

    private OwnerCheckpointResult result(long objects, long bytes, long started) {
        return new OwnerCheckpointResult(
                owner.segmentName(), objects, bytes, (System.nanoTime() - started) / 1e9);
    }
}
