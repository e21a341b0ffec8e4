package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointObject;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.reshard.manifest.GenerationId;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.springframework.stereotype.Component;

/**
 * How a save or a restore reaches the segment owners: which owner takes which objects ({@link
 * #spread}), calling them in parallel with every failure kept per owner ({@link #call}), and the
 * one-line summary of the failed ones.
 */
@Component
class OwnerCalls {

    private final Registry registry;
    private final CheckpointProperties properties;

    OwnerCalls(Registry registry, CheckpointProperties properties) {
        this.registry = registry;
        this.properties = properties;
    }

    /**
     * Each object goes to one owner, into that owner's own segment: largest first to the owner with
     * the fewest bytes so far, so the bytes spread evenly over the owners present.
     */
    static Map<String, List<OwnerCheckpointObject>> spread(
            List<CheckpointObject> objects, List<SegmentOwner> owners) {
        List<CheckpointObject> sorted = new ArrayList<>(objects);
        sorted.sort(
                Comparator.comparingLong(CheckpointObject::getSize)
                        .reversed()
                        .thenComparing(CheckpointObject::getKey));
        long[] load = new long[owners.size()];
        Map<String, List<OwnerCheckpointObject>> plan = new LinkedHashMap<>();
        for (CheckpointObject o : sorted) {
            int best = 0;
            for (int i = 1; i < load.length; i++) {
                if (load[i] < load[best]) {
                    best = i;
                }
            }
            load[best] += o.getSize();
            plan.computeIfAbsent(owners.get(best).getSegment(), s -> new ArrayList<>())
                    .add(
                            new OwnerCheckpointObject()
                                    .key(o.getKey())
                                    .size(o.getSize())
                                    .checksum(o.getChecksum())
                                    ._file(o.getFile())
                                    .offset(o.getOffset()));
        }
        // Each owner reads its files front to back.
        plan.values()
                .forEach(
                        l ->
                                l.sort(
                                        Comparator.comparing(OwnerCheckpointObject::getFile)
                                                .thenComparingLong(
                                                        OwnerCheckpointObject::getOffset)));
        return plan;
    }

    /**
     * What every save or restore call tells an owner before its own part: the generation, and the
     * directory (as the owners see the shared filesystem) its files are saved into or restored
     * from.
     */
    static OwnerCheckpointRequest request(GenerationId id, Path directory) {
        return new OwnerCheckpointRequest()
                .model(id.model())
                .generation(id.generation())
                .directory(directory.toString());
    }

    /**
     * Calls the owner of each of {@code segments} ({@code properties.parallelism()} at a time),
     * keeping each answer in {@code answers}: one {@link OwnerCheckpoint} per segment, failed (with
     * its error) when the owner is unregistered, dead, without an admin URL or its call failed.
     */
    List<OwnerCheckpoint> call(
            Iterable<String> segments,
            Function<String, OwnerCheckpointRequest> requestFor,
            BiFunction<String, OwnerCheckpointRequest, OwnerCheckpointResult> call,
            Map<String, OwnerCheckpointResult> answers) {
        List<String> names = new ArrayList<>();
        segments.forEach(names::add);
        if (names.isEmpty()) {
            return List.of();
        }
        ExecutorService pool =
                Executors.newFixedThreadPool(Math.min(properties.parallelism(), names.size()));
        try {
            List<Future<OwnerCheckpoint>> futures = new ArrayList<>();
            for (String segment : names) {
                futures.add(
                        pool.submit(
                                () -> callOne(segment, requestFor.apply(segment), call, answers)));
            }
            List<OwnerCheckpoint> out = new ArrayList<>();
            for (Future<OwnerCheckpoint> f : futures) {
                try {
                    out.add(f.get());
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while calling owners", ex);
                } catch (ExecutionException ex) {
                    throw new IllegalStateException(ex.getCause());
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private OwnerCheckpoint callOne(
            String segment,
            OwnerCheckpointRequest request,
            BiFunction<String, OwnerCheckpointRequest, OwnerCheckpointResult> call,
            Map<String, OwnerCheckpointResult> answers) {
        Optional<SegmentOwner> owner = registry.findSegment(segment);
        if (owner.isEmpty() || !owner.get().getAlive() || owner.get().getAdminUrl() == null) {
            return failed(
                    segment,
                    owner.isEmpty()
                            ? "no owner registered"
                            : (!owner.get().getAlive()
                                    ? "owner is not alive"
                                    : "owner has no admin URL"),
                    0);
        }
        long start = System.nanoTime();
        try {
            OwnerCheckpointResult result = call.apply(owner.get().getAdminUrl(), request);
            double seconds =
                    result.getSeconds() != null
                            ? result.getSeconds()
                            : (System.nanoTime() - start) / 1e9;
            answers.put(segment, result);
            OwnerCheckpoint done =
                    new OwnerCheckpoint(segment, result.getObjects(), result.getBytes(), seconds);
            done.setFile(result.getFile());
            return done;
        } catch (RuntimeException ex) {
            return failed(segment, message(ex), (System.nanoTime() - start) / 1e9);
        }
    }

    /** "2 of 3 owner(s) failed to {what}: {first failed segment}: {its error}". */
    static String failedSummary(List<OwnerCheckpoint> failed, int of, String what) {
        OwnerCheckpoint first = failed.get(0);
        return failed.size()
                + " of "
                + of
                + " owner(s) failed to "
                + what
                + ": "
                + first.getSegment()
                + ": "
                + first.getError();
    }

    /** An owner's problem detail when it answered one, else the exception's message. */
    private static String message(RuntimeException ex) {
        if (ex instanceof org.springframework.web.client.RestClientResponseException r) {
            String body = r.getResponseBodyAsString();
            return r.getStatusCode().value() + " " + (body.isEmpty() ? r.getMessage() : body);
        }
        return ex.getMessage();
    }

    private static OwnerCheckpoint failed(String segment, String error, double seconds) {
        OwnerCheckpoint r = new OwnerCheckpoint(segment, 0L, 0L, seconds);
        r.setError(error == null ? "failed" : error);
        return r;
    }
}
