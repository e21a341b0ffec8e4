package io.weightrelay.publisher.checkpoint;

import io.weightrelay.api.publisher.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.model.OwnerCheckpointResult;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.publisher.publish.GenerationLayout;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.files.DirectoryFiles;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemKind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
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
import java.util.zip.CRC32C;

/**
 * Saves the objects of a generation held by this segment into one file, {@code
 * <directory>/<segment>.bin}, reading the segment once (what is checksummed is what is written) and
 * fsynced, and answers where each object starts in it; restores the objects control-api assigns it
 * from such files into its own segment. What makes a checkpoint usable (its manifest, the
 * completion marker) is control-api's part. On Mooncake the objects live in the agent's mounted
 * segment, which this JVM does not map: a save reads them into staging first, batch by batch, and
 * saves those bytes the same way. Thread safe (stateless).
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
        GenerationLayout layout = control.layout(new GenerationId(model, generation));
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
        // On Mooncake the bytes live in the agent's mounted segment, which this JVM does not map:
        // they are read through staging batch by batch (saveThroughStaging), in layout order.
        boolean throughStaging = owner.stagesApart();
        if (throughStaging) {
            for (Map.Entry<String, Long> e : owner.heldInAgent(keys).entrySet()) {
                String expected = publishedChecksum(published, e.getKey());
                saved.add(
                        new OwnerCheckpointObject(
                                e.getKey(), e.getValue(), expected, name, offset));
                offset += e.getValue();
            }
        } else {
            // One pipelined directory read for the whole generation, in layout order.
            for (Map.Entry<String, ByteBuffer> e : owner.ownedBytes(keys).entrySet()) {
                String expected = publishedChecksum(published, e.getKey());
                ByteBuffer view = e.getValue();
                held.add(new Held(e.getKey(), view, Checksums.parse(expected)));
                saved.add(
                        new OwnerCheckpointObject(
                                e.getKey(), (long) view.remaining(), expected, name, offset));
                offset += view.remaining();
            }
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
                            StandardOpenOption.WRITE,
                            LinkOption.NOFOLLOW_LINKS)) {
                if (throughStaging) {
                    saveThroughStaging(saved, out, helpers);
                } else {
                    copyCheckAndWrite(held, out, helpers);
                }
                out.force(true);
            }
            DirectoryFiles.sync(directory);
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

    private static String publishedChecksum(Map<String, String> published, String key) {
        String expected = published.get(key);
        if (expected == null) {
            throw CheckpointProblems.refused(key, "no checksum was registered for it");
        }
        return expected;
    }

    /**
     * Saves what the owner's Mooncake agent holds: the objects are read from the agent's own
     * segment (a local read, no network byte) into staging, in batches of up to one staging
     * reservation, and each batch's staging views go through {@link #copyCheckAndWrite} as the
     * built-in engine's segment views do (checked against the published checksum, written, the file
     * removed on failure). The reservation is held until the batch is written.
     */
    private void saveThroughStaging(
            List<OwnerCheckpointObject> objects, FileChannel out, ExecutorService helpers)
            throws IOException {
        int next = 0;
        while (next < objects.size()) {
            List<OwnerCheckpointObject> batch = new ArrayList<>();
            long bytes = 0;
            for (; next < objects.size(); next++) {
                OwnerCheckpointObject o = objects.get(next);
                long aligned = StagingArea.align(Math.max(1, o.getSize()));
                if (aligned > staging.maxBatchBytes()) {
                    throw CheckpointProblems.refused(
                            o.getKey(),
                            "its "
                                    + o.getSize()
                                    + " bytes exceed one staging reservation"
                                    + " (relay.staging.max-batch-bytes, "
                                    + staging.maxBatchBytes()
                                    + "), through which an owner on Mooncake reads what it saves");
                }
                if (!batch.isEmpty() && bytes + aligned > staging.maxBatchBytes()) {
                    break;
                }
                batch.add(o);
                bytes += aligned;
            }
            StagingArea.Reservation reserved = staging.reserve(bytes);
            try {
                StagingArea.Reservation r = staging.claim(reserved.id());
                List<StagingArea.Piece> pieces = new ArrayList<>(batch.size());
                long at = r.offset();
                for (OwnerCheckpointObject o : batch) {
                    pieces.add(new StagingArea.Piece(o.getKey(), at, o.getSize()));
                    at += StagingArea.align(Math.max(1, o.getSize()));
                }
                long[] read = staging.load(r, pieces);
                List<Held> views = new ArrayList<>(batch.size());
                for (int i = 0; i < batch.size(); i++) {
                    OwnerCheckpointObject o = batch.get(i);
                    if (read[i] != o.getSize()) {
                        throw CheckpointProblems.CHECKPOINT_IO
                                .exception(
                                        "cannot read object "
                                                + o.getKey()
                                                + " from the Mooncake segment of "
                                                + owner.segmentName()
                                                + ": read answered "
                                                + read[i]
                                                + " of "
                                                + o.getSize()
                                                + " bytes")
                                .with("object", o.getKey());
                    }
                    views.add(
                            new Held(
                                    o.getKey(),
                                    staging.bytes(
                                            pieces.get(i).offset(), Math.toIntExact(o.getSize())),
                                    Checksums.parse(o.getChecksum())));
                }
                copyCheckAndWrite(views, out, helpers);
            } finally {
                staging.free(reserved);
            }
        }
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
            if (!DirectoryFiles.staysInside(o.getFile())) {
                throw CommonProblems.INVALID_REQUEST
                        .exception(
                                "object "
                                        + o.getKey()
                                        + " names file '"
                                        + o.getFile()
                                        + "', not a file inside the checkpoint directory")
                        .with("object", o.getKey());
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

    /** Bytes of the segment copied, checked and written at once. */
    static final int CHUNK_BYTES = 4 << 20;

    /**
     * Reads every held object's bytes from the segment exactly once, chunk by chunk into a private
     * buffer; the checksum is taken over that copy and the file gets that copy, so what is written
     * is exactly what was checked, whatever happens to the segment meanwhile. One chunk is written
     * (on a helper) while the next is copied and checked; the disk flushes what is written as it
     * goes ({@link Flusher}). The first object whose copy does not match its published checksum
     * stops the save.
     */
    private void copyCheckAndWrite(List<Held> held, FileChannel out, ExecutorService helpers)
            throws IOException {
        ByteBuffer[] buffers = {
            ByteBuffer.allocateDirect(CHUNK_BYTES), ByteBuffer.allocateDirect(CHUNK_BYTES)
        };
        Flusher flusher = new Flusher(out, helpers);
        Future<?> writing = CompletableFuture.completedFuture(null);
        int next = 0;
        try {
            for (Held h : held) {
                CRC32C crc = new CRC32C();
                ByteBuffer source = h.bytes().duplicate();
                while (source.hasRemaining()) {
                    // The buffer not being written: the one before it was awaited below.
                    ByteBuffer chunk = buffers[next++ % 2];
                    chunk.clear();
                    int n = Math.min(chunk.capacity(), source.remaining());
                    chunk.put(source.slice(source.position(), n));
                    source.position(source.position() + n);
                    chunk.flip();
                    crc.update(chunk.duplicate());
                    await(writing);
                    writing =
                            helpers.submit(
                                    () -> {
                                        while (chunk.hasRemaining()) {
                                            flusher.written(out.write(chunk));
                                        }
                                        return null;
                                    });
                }
                int copied = (int) crc.getValue();
                if (copied != h.published()) {
                    throw CheckpointProblems.refused(
                            h.key(),
                            "its bytes in segment "
                                    + owner.segmentName()
                                    + " have "
                                    + Checksums.format(copied)
                                    + ", published "
                                    + Checksums.format(h.published()));
                }
            }
        } finally {
            await(writing);
        }
        flusher.finish();
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
        for (Path element : directory) {
            if (element.toString().equals("..") || element.toString().equals(".")) {
                throw CommonProblems.INVALID_REQUEST.exception(
                        "checkpoint directory '" + directory + "' names '" + element + "'");
            }
        }
        return directory;
    }

    private OwnerCheckpointResult result(long objects, long bytes, long started) {
        return new OwnerCheckpointResult(
                owner.segmentName(), objects, bytes, (System.nanoTime() - started) / 1e9);
    }
}
