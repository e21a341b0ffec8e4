package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.registry.Registry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.springframework.stereotype.Component;

/** Calls to the segment owners' checkpoint endpoints, in parallel, one answer per owner. */
@Component
class OwnerCalls {

    private final Registry registry;
    private final OwnerClient owners;
    private final CheckpointProperties properties;

    OwnerCalls(Registry registry, OwnerClient owners, CheckpointProperties properties) {
        this.registry = registry;
        this.owners = owners;
        this.properties = properties;
    }

    /** Asks each segment's owner to save its objects of a generation. */
    List<OwnerCheckpoint> save(
            Iterable<String> segments,
            Function<String, OwnerCheckpointRequest> requestFor,
            Map<String, OwnerCheckpointResult> answers) {
        return each(segments, requestFor, owners::save, answers);
    }

    /** Asks each segment's owner to re-store the objects assigned to it. */
    List<OwnerCheckpoint> restore(
            Iterable<String> segments,
            Function<String, OwnerCheckpointRequest> requestFor,
            Map<String, OwnerCheckpointResult> answers) {
        return each(segments, requestFor, owners::restore, answers);
    }

    /**
     * Calls the owner of each segment at once (up to {@code relay.checkpoints.parallelism}); an
     * owner that is gone, or fails, is an answer with its error, never an exception.
     */
    private List<OwnerCheckpoint> each(
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
                } catch (java.util.concurrent.ExecutionException ex) {
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
    static String failedMessage(List<OwnerCheckpoint> failed, int of, String what) {
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
