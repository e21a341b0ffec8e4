package io.weightrelay.lab.rollout;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.PlacedBuffer;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The serving side of a simulated engine, as a real one behaves: it answers requests from its own
 * serving weights on a thread of its own, drains and pauses only while its update installs, and
 * remembers what every request read, so a test can tell which generation each one was served from.
 *
 * <p>Its serving weights: for a compat worker, a copy of its own that its "load" fills from the
 * received safetensors image once the update ended (what an engine's weight loader does); for a
 * staged direct worker, the serving copy the loader writes at install ({@code servingShmPath}); for
 * an in-place direct worker, the receive buffer itself. A request reads every byte of them and
 * records one CRC32C per buffer: a request served from one generation matches that generation's
 * fingerprint exactly; one that read a mix matches none.
 *
 * <p>Not thread safe apart from its serving thread: one thread drives its updates.
 */
public final class ServingEngine implements AutoCloseable {

    /** One request: when it was served (on {@link System#nanoTime()}) and what it read. */
    public record Request(long startedAt, long endedAt, Fingerprint read) {}

    /** The CRC32C of each serving buffer, in the registration's order. */
    public record Fingerprint(long[] crcs) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Fingerprint f && Arrays.equals(crcs, f.crcs);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(crcs);
        }

        @Override
        public String toString() {
            return Arrays.toString(crcs);
        }
    }

    /** When the engine stopped serving and when it served again. */
    public record Pause(long from, long to) {
        public double seconds() {
            return (to - from) / 1e9;
        }

        boolean covers(Request r) {
            return r.endedAt() > from && r.startedAt() < to;
        }
    }

    /**
     * One update as the engine lived it, in seconds: the whole of it, the fetch (start to the
     * group's FETCHED, as the engine saw it), the engine's pause (drain, install, its own load,
     * resume) and the install within it (the install call to the outcome); the pause is 0 when the
     * update ended before an install.
     */
    public record Timing(
            UpdateProgress end,
            double updateS,
            double fetchS,
            double pauseS,
            double installS,
            long fetchedAt) {}

    /** A buffer the engine serves from, and for a compat worker the image it loads it from. */
    private record Region(String name, ByteBuffer serving, ByteBuffer image) {}

    private final RolloutEngine engine;
    private final List<Region> regions;
    private final List<Request> requests = new ArrayList<>();
    private final List<Pause> pauses = new ArrayList<>();
    private final Object serving = new Object();
    private boolean paused;
    private volatile boolean closed;
    private Thread server;

    private ServingEngine(RolloutEngine engine, List<Region> regions) {
        this.engine = engine;
        this.regions = regions;
    }

    /**
     * The serving side of {@code engine} as its loader placed its buffers now (after an update, so
     * every buffer is registered); a compat worker's own weights start empty until {@link #load}.
     */
    public static ServingEngine of(RolloutEngine engine) {
        InstanceStatus status = engine.status();
        Map<String, ConsumeMode> modes = new HashMap<>();
        for (WorkerPlacement w : status.getWorkers()) {
            modes.put(w.getWorkerId(), w.getMode());
        }
        Map<String, MappedByteBuffer> files = new HashMap<>();
        List<Region> regions = new ArrayList<>();
        for (PlacedBuffer b : status.getBuffers()) {
            if (b.getShmPath() == null || b.getServingShmPath() == null) {
                throw new IllegalStateException(
                        "buffer " + b.getBufferId() + " of " + b.getWorkerId() + " is not mapped");
            }
            ByteBuffer received = slice(files, b.getShmPath(), b.getOffset(), b.getSize());
            String name = b.getWorkerId() + "/" + b.getBufferId();
            if (modes.get(b.getWorkerId()) == ConsumeMode.COMPAT) {
                regions.add(
                        new Region(
                                name,
                                ByteBuffer.allocateDirect(Math.toIntExact(b.getSize())),
                                received));
            } else {
                regions.add(
                        new Region(
                                name,
                                slice(files, b.getServingShmPath(), b.getOffset(), b.getSize()),
                                null));
            }
        }
        return new ServingEngine(engine, regions);
    }

    private static ByteBuffer slice(
            Map<String, MappedByteBuffer> files, String path, long offset, long size) {
        MappedByteBuffer file = files.computeIfAbsent(path, p -> map(Path.of(p)));
        return file.slice(Math.toIntExact(offset), Math.toIntExact(size));
    }

    private static MappedByteBuffer map(Path file) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            return ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
        } catch (IOException e) {
            throw new UncheckedIOException("mapping " + file, e);
        }
    }

    public RolloutEngine engine() {
        return engine;
    }

    /** The engine's own load: each compat worker copies its received image into its weights. */
    public void load() {
        for (Region r : regions) {
            if (r.image() != null) {
                r.serving().clear().put(r.image().duplicate().clear()).clear();
            }
        }
    }

    /** What the engine serves from now. */
    public Fingerprint servingFingerprint() {
        return fingerprint(false);
    }

    /** What its loader received: equal to {@link #servingFingerprint()} once installed. */
    public Fingerprint receivedFingerprint() {
        return fingerprint(true);
    }

    private Fingerprint fingerprint(boolean received) {
        long[] crcs = new long[regions.size()];
        for (int i = 0; i < crcs.length; i++) {
            Region r = regions.get(i);
            ByteBuffer bytes = received && r.image() != null ? r.image() : r.serving();
            CRC32C crc = new CRC32C();
            crc.update(bytes.duplicate().clear());
            crcs[i] = crc.getValue();
        }
        return new Fingerprint(crcs);
    }

    /** Starts answering requests, one after another, until {@link #close}. */
    public void startServing() {
        server =
                new Thread(
                        () -> {
                            while (!closed) {
                                serveOne();
                            }
                        },
                        "serving-" + engine.instance());
        server.setDaemon(true);
        server.start();
    }

    private void serveOne() {
        synchronized (serving) {
            while (paused && !closed) {
                try {
                    serving.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            if (closed) {
                return;
            }
            long started = System.nanoTime();
            Fingerprint read = servingFingerprint();
            requests.add(new Request(started, System.nanoTime(), read));
        }
        // Requests arrive, they are not served back to back: leave the cores to the loaders.
        try {
            Thread.sleep(2);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Drains (the request in flight ends) and stops serving. */
    private long pause() {
        synchronized (serving) {
            paused = true;
            return System.nanoTime();
        }
    }

    private void resume(long from) {
        synchronized (serving) {
            pauses.add(new Pause(from, System.nanoTime()));
            paused = false;
            serving.notifyAll();
        }
    }

    /**
     * Updates to {@code generation} (null: the active one) serving through the fetch: start, follow
     * it to FETCHED while serving, drain and pause, install, load (compat), resume. An update that
     * ends before FETCHED never pauses the engine.
     */
    public Timing updateServing(Long generation, Duration timeout) throws InterruptedException {
        long started = System.nanoTime();
        UpdateProgress p = engine.startServing(generation, timeout);
        UpdateProgress fetched = engine.awaitFetched(p.getUpdateId(), Duration.ofSeconds(10));
        long fetchedAt = System.nanoTime();
        if (fetched.getOutcome() != UpdateOutcome.RUNNING
                || fetched.getPhase() != UpdatePhase.FETCHED) {
            return new Timing(fetched, (fetchedAt - started) / 1e9, 0, 0, 0, 0);
        }
        long pausedAt = pause();
        long installing = System.nanoTime();
        engine.install(p.getUpdateId());
        UpdateProgress end = engine.await(p.getUpdateId(), Duration.ofSeconds(10));
        long installed = System.nanoTime();
        if (end.getOutcome() == UpdateOutcome.UPDATED) {
            load();
        }
        resume(pausedAt);
        long resumed = System.nanoTime();
        return new Timing(
                end,
                (resumed - started) / 1e9,
                (fetchedAt - started) / 1e9,
                (resumed - pausedAt) / 1e9,
                (installed - installing) / 1e9,
                fetchedAt);
    }

    /** Every request served so far, in order. */
    public List<Request> requests() {
        synchronized (serving) {
            return List.copyOf(requests);
        }
    }

    /** Every pause so far, in order. */
    public List<Pause> pauses() {
        synchronized (serving) {
            return List.copyOf(pauses);
        }
    }

    /**
     * How many requests were served from each known generation ({@code fingerprints}: generation to
     * its fingerprint); requests that match none are counted under {@code -1}: they read a mix.
     */
    public Map<Long, Integer> servedByGeneration(Map<Long, Fingerprint> fingerprints) {
        Map<Long, Integer> out = new HashMap<>();
        for (Request r : requests()) {
            out.merge(generationOf(r, fingerprints), 1, Integer::sum);
        }
        return out;
    }

    /** The generation {@code r} was served from, or -1 when it read a mix. */
    public static long generationOf(Request r, Map<Long, Fingerprint> fingerprints) {
        for (Map.Entry<Long, Fingerprint> e : fingerprints.entrySet()) {
            if (e.getValue().equals(r.read())) {
                return e.getKey();
            }
        }
        return -1;
    }

    /** Whether any request was served while a pause held. */
    public boolean servedWhilePaused() {
        for (Pause p : pauses()) {
            for (Request r : requests()) {
                if (p.covers(r)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Stops serving; idempotent. */
    @Override
    public void close() {
        closed = true;
        synchronized (serving) {
            serving.notifyAll();
        }
        if (server != null) {
            try {
                server.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
