package io.weightrelay.publisher.checkpoint;

import io.weightrelay.api.publisher.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.model.OwnerCheckpointResult;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.publisher.publish.GenerationLayout;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemKind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Saves the objects of a generation held by this segment into one file, {@code
 * <directory>/<segment>.bin}, streamed straight from the segment and fsynced, and answers where
 * each object starts in it; restores the objects control-api assigns it from such files into its
 * own segment. What makes a checkpoint usable (its manifest, the completion marker) is
 * control-api's part. Thread safe (stateless).
 */
public final class OwnerCheckpoints {

    private final SegmentOwner owner;
    private final StagingArea staging;
    private final ControlPlane control;

    public OwnerCheckpoints(SegmentOwner owner, StagingArea staging, ControlPlane control) {
        this.owner = owner;
        this.staging = staging;
        this.control = control;
    }

    /** The owner file of this segment in a checkpoint directory. */
    public String fileName() {
        return owner.segmentName() + ".bin";
    }

    /**
     * Writes every object of the generation that this segment holds, each only if its bytes match
     * the checksum registered at publish ({@code published}, by store key): a byte changed in the
     * segment since is never saved as if it were the trainer's. On any failure the file is removed.
     */
    public OwnerCheckpointResult save(OwnerCheckpointRequest request) {
        String model = request.getModel();
        long generation = request.getGeneration();
        Map<String, String> published = request.getChecksums();
        Path directory =
                directory(
                        request,
                        "save",
                        published != null && !published.isEmpty(),
                        CheckpointProblems.CHECKSUMS_REQUIRED,
                        "needs the checksums registered at publish (checksums)");
        long started = System.nanoTime();
        GenerationLayout layout = control.layout(model, generation);
        String name = fileName();
        Path file = directory.resolve(name);
        List<Held> held = new ArrayList<>();
        List<OwnerCheckpointObject> saved = new ArrayList<>();
        long offset = 0;
        List<String> keys = new ArrayList<>();
        for (GenerationLayout.Tensor tensor : layout.tensors().values()) {
            for (GenerationLayout.Fragment f : tensor.fragments()) {
                keys.add(f.key());
            }
        }
        // One pipelined directory read for the whole generation, in layout order.
        for (Map.Entry<String, ByteBuffer> e : owner.ownedBytes(keys).entrySet()) {
            String expected = published.get(e.getKey());
            if (expected == null) {
                throw CheckpointProblems.refused(e.getKey(), "no checksum was registered for it");
            }
            ByteBuffer view = e.getValue();
            held.add(new Held(e.getKey(), view, Checksums.parse(expected)));
            saved.add(
                    new OwnerCheckpointObject(
                            e.getKey(), (long) view.remaining(), expected, name, offset));
            offset += view.remaining();
        }
        boolean done = false;
        ExecutorService helpers =
                Executors.newFixedThreadPool(2, DaemonThreads.named("checkpoint-save"));
        try {
            Files.createDirectories(directory);
            try (FileChannel out =
                    FileChannel.open(
                            file,
                            StandardOpenOption.CREATE,
                            StandardOpenOption.TRUNCATE_EXISTING,
                            StandardOpenOption.WRITE)) {
                // The checksums are checked on one thread while the bytes are written on this
                // one, and the disk flushes what is written as it goes: checking, copying into
                // the page cache and the device's writing overlap instead of following each other.
                AtomicReference<RuntimeException> refused = new AtomicReference<>();
                Future<?> checked = helpers.submit(() -> verify(held, refused));
                Flusher flusher = new Flusher(out, helpers);
                for (Held h : held) {
                    if (refused.get() != null) {
                        break;
                    }
                    ByteBuffer view = h.bytes().duplicate();
                    while (view.hasRemaining()) {
                        flusher.written(out.write(view));
                    }
                }
                await(checked);
                if (refused.get() != null) {
                    throw refused.get();
                }
                flusher.finish();
                out.force(true);
            }
            syncDirectory(directory);
            done = true;
        } catch (IOException e) {
            throw CheckpointProblems.CHECKPOINT_IO.exception(
                    "cannot save into " + file + ": " + e, e);
        } finally {
            helpers.shutdownNow();
            if (!done) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // the save fails anyway, and no marker is ever written for it
                }
            }
        }
        return result(saved.size(), offset, started).file(name).saved(saved);
    }

    /**
     * Puts the given objects back into this segment, each read from its owner file in {@code
     * directory} and checked against its checksum first; objects already stored are left alone.
     * Objects go in batches of up to one staging reservation, stored like a publish batch.
     */
    public OwnerCheckpointResult restore(OwnerCheckpointRequest request) {
        String model = request.getModel();
        long generation = request.getGeneration();
        List<OwnerCheckpointObject> objects = request.getObjects();
        Path directory =
                directory(
                        request,
                        "restore",
                        objects != null && !objects.isEmpty(),
                        CheckpointProblems.OBJECTS_REQUIRED,
                        "names the objects this owner re-stores (objects)");
        long started = System.nanoTime();
        String prefix = model + "/" + generation + "/";
        List<OwnerCheckpointObject> batch = new ArrayList<>();
        List<OwnerCheckpointObject> stored = new ArrayList<>();
        long batchBytes = 0;
        long bytes = 0;
        for (OwnerCheckpointObject o : objects) {
            if (!o.getKey().startsWith(prefix)) {
                throw io.weightrelay.service.problem.CommonProblems.INVALID_REQUEST.exception(
                        "object " + o.getKey() + " is not of generation " + prefix);
            }
            if (owner.exists(o.getKey())) {
                continue;
            }
            long aligned = StagingArea.align(Math.max(1, o.getSize()));
            if (!batch.isEmpty() && batchBytes + aligned > staging.maxBatchBytes()) {
                storeBatch(directory, batch, batchBytes);
                stored.addAll(batch);
                batch.clear();
                batchBytes = 0;
            }
            batch.add(o);
            batchBytes += aligned;
            bytes += o.getSize();
        }
        if (!batch.isEmpty()) {
            storeBatch(directory, batch, batchBytes);
            stored.addAll(batch);
        }
        return result(stored.size(), bytes, started).saved(stored);
    }

    private void storeBatch(Path directory, List<OwnerCheckpointObject> batch, long bytes) {
        StagingArea.Reservation r = staging.reserve(bytes);
        try {
            List<StagingArea.Piece> pieces = new ArrayList<>(batch.size());
            long at = r.offset();
            for (OwnerCheckpointObject o : batch) {
                int size = Math.toIntExact(o.getSize());
                ByteBuffer target = staging.bytes(at, size);
                Path file = directory.resolve(o.getFile());
                try (FileChannel in = FileChannel.open(file)) {
                    long position = o.getOffset();
                    while (target.hasRemaining()) {
                        int n = in.read(target, position);
                        if (n < 0) {
                            throw CheckpointProblems.CHECKPOINT_CORRUPT
                                    .exception(
                                            "saved object "
                                                    + o.getKey()
                                                    + " is cut short in "
                                                    + file)
                                    .with("object", o.getKey());
                        }
                        position += n;
                    }
                } catch (NoSuchFileException e) {
                    throw CheckpointProblems.CHECKPOINT_NOT_FOUND.exception(
                            "owner file " + file + " of object " + o.getKey() + " is missing");
                } catch (IOException e) {
                    throw CheckpointProblems.CHECKPOINT_IO.exception(
                            "cannot read " + o.getKey() + " from " + file + ": " + e, e);
                }
                target.flip();
                int crc = Checksums.crc32c(target);
                if (crc != Checksums.parse(o.getChecksum())) {
                    throw CheckpointProblems.CHECKPOINT_CORRUPT
                            .exception(
                                    "saved object "
                                            + o.getKey()
                                            + " in "
                                            + file
                                            + " has "
                                            + Checksums.format(crc)
                                            + ", the checkpoint says "
                                            + o.getChecksum())
                            .with("object", o.getKey());
                }
                pieces.add(new StagingArea.Piece(o.getKey(), at, o.getSize()));
                at += StagingArea.align(Math.max(1, o.getSize()));
            }
            staging.store(staging.claim(r.id()), pieces, Runnable::run);
        } finally {
            staging.free(r);
        }
    }

    /** An object this segment holds, its bytes in the segment and the checksum published. */
    private record Held(String key, ByteBuffer bytes, int published) {}

    /** Checks every object's bytes against its published checksum; the first mismatch stops. */
    private void verify(List<Held> held, AtomicReference<RuntimeException> refused) {
        for (Held h : held) {
            int crc = Checksums.crc32c(h.bytes());
            if (crc != h.published()) {
                refused.set(
                        CheckpointProblems.refused(
                                h.key(),
                                "its bytes in segment "
                                        + owner.segmentName()
                                        + " have "
                                        + Checksums.format(crc)
                                        + ", published "
                                        + Checksums.format(h.published())));
                return;
            }
        }
    }

    /**
     * Has the file's written bytes flushed to the device every {@link #FLUSH_BYTES} on a helper
     * thread, at most one flush at a time, so the device writes while the next bytes are copied.
     */
    private static final class Flusher {
        private final FileChannel out;
        private final ExecutorService helpers;
        private long unflushed;
        private Future<?> running = CompletableFuture.completedFuture(null);

        Flusher(FileChannel out, ExecutorService helpers) {
            this.out = out;
            this.helpers = helpers;
        }

        void written(long bytes) throws IOException {
            unflushed += bytes;
            if (unflushed >= FLUSH_BYTES && running.isDone()) {
                await(running);
                unflushed = 0;
                running =
                        helpers.submit(
                                () -> {
                                    out.force(false);
                                    return null;
                                });
            }
        }

        void finish() throws IOException {
            await(running);
        }
    }

    /** Bytes written between flushes to the device. */
    static final long FLUSH_BYTES = 64L << 20;

    /** Waits for a helper's task; its I/O error or refusal is rethrown as itself. */
    private static void await(Future<?> task) throws IOException {
        try {
            task.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while saving");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /**
     * The request's checkpoint directory: 400 when it is not a path here, when the request lacks
     * what the {@code operation} needs ({@code given} false: {@code missing} with {@code detail}),
     * or when the path is not absolute, in that order.
     */
    private static Path directory(
            OwnerCheckpointRequest request,
            String operation,
            boolean given,
            ProblemKind missing,
            String detail) {
        Path directory;
        try {
            directory = Path.of(request.getDirectory());
        } catch (InvalidPathException e) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "checkpoint directory is not a path here: " + e.getReason());
        }
        if (!given) {
            throw missing.exception(
                    "a "
                            + operation
                            + " of "
                            + request.getModel()
                            + "/"
                            + request.getGeneration()
                            + " "
                            + detail);
        }
        if (!directory.isAbsolute()) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "checkpoint directory '" + directory + "' is not absolute");
        }
        return directory;
    }

    /** Makes the new file's directory entry durable too. */
    static void syncDirectory(Path directory) throws IOException {
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        }
    }

    private OwnerCheckpointResult result(long objects, long bytes, long started) {
        return new OwnerCheckpointResult(
                owner.segmentName(), objects, bytes, (System.nanoTime() - started) / 1e9);
    }
}
