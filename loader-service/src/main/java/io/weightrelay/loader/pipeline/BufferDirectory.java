package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.ForeignBuffer;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Slice;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where every worker's buffers live: (worker, buffer id) -> (segment, base offset, size). Computed
 * the same way by every loader from the registrations alone, so a writer knows the (segment,
 * offset) of every byte it pushes before apply. A compatibility worker without a buffer named
 * {@link Worker#COMPAT_BUFFER} receives its safetensors image in its first buffer. A segment in the
 * worker's own Transfer Engine memory ({@link BufferSpec#foreign()}) is packed the same way from
 * the memory's address; every buffer of it declares that same memory.
 */
public final class BufferDirectory {
    /** Buffers packed into one segment start at multiples of this. */
    public static final long ALIGNMENT = 4096;

    /** One placed buffer. */
    public record Placed(String workerId, String bufferId, String segment, long base, long size) {}

    private final Map<String, Map<String, Placed>> byWorker = new HashMap<>();
    private final Map<String, Long> segmentSizes = new LinkedHashMap<>();
    private final Map<String, String> segmentWorker = new HashMap<>();
    private final Map<String, ForeignBuffer> foreign = new HashMap<>();

    private final List<WorkerBuffers> registrations;

    public BufferDirectory(List<WorkerBuffers> workers) {
        this.registrations = List.copyOf(workers);
        for (WorkerBuffers w : workers) {
            Map<String, Placed> buffers = new LinkedHashMap<>();
            for (BufferSpec b : w.buffers()) {
                String owner = segmentWorker.putIfAbsent(b.segment(), w.workerId());
                if (owner != null && !owner.equals(w.workerId())) {
                    throw new IllegalArgumentException(
                            "segment "
                                    + b.segment()
                                    + " is registered by workers "
                                    + owner
                                    + " and "
                                    + w.workerId());
                }
                if (segmentSizes.containsKey(b.segment())
                        && !java.util.Objects.equals(foreign.get(b.segment()), b.foreign())) {
                    throw new IllegalArgumentException(
                            "buffer "
                                    + b.bufferId()
                                    + " of worker "
                                    + w.workerId()
                                    + " declares segment "
                                    + b.segment()
                                    + (b.foreign() == null
                                            ? " as shared memory"
                                            : " in the Transfer Engine memory " + b.foreign())
                                    + ", another buffer of it otherwise: a segment is one memory");
                }
                if (b.foreign() != null) {
                    foreign.put(b.segment(), b.foreign());
                }
                long base = align(segmentSizes.getOrDefault(b.segment(), 0L));
                Placed placed = new Placed(w.workerId(), b.bufferId(), b.segment(), base, b.size());
                if (buffers.putIfAbsent(b.bufferId(), placed) != null) {
                    throw new IllegalArgumentException(
                            "worker "
                                    + w.workerId()
                                    + " registers buffer "
                                    + b.bufferId()
                                    + " twice");
                }
                segmentSizes.put(b.segment(), base + b.size());
            }
            byWorker.put(w.workerId(), buffers);
        }
    }

    private static long align(long offset) {
        return (offset + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    /**
     * This directory with {@code own} workers' buffers as given: a loader's own registration, which
     * says what control-api's copy of it leaves out (memory in a worker's own Transfer Engine,
     * {@link BufferSpec#foreign()}). Workers this directory does not hold are ignored; returns this
     * directory when nothing differs.
     */
    public BufferDirectory withOwnWorkers(List<WorkerBuffers> own) {
        Map<String, WorkerBuffers> mine = new HashMap<>();
        own.forEach(w -> mine.put(w.workerId(), w));
        List<WorkerBuffers> merged =
                registrations.stream().map(w -> mine.getOrDefault(w.workerId(), w)).toList();
        return merged.equals(registrations) ? this : new BufferDirectory(merged);
    }

    /** The buffer, or empty when the worker or buffer is unknown. */
    public Optional<Placed> find(String workerId, String bufferId) {
        Map<String, Placed> buffers = byWorker.get(workerId);
        if (buffers == null) {
            return Optional.empty();
        }
        Placed p = buffers.get(bufferId);
        if (p == null && Worker.COMPAT_BUFFER.equals(bufferId)) {
            p = buffers.values().iterator().next();
        }
        return Optional.ofNullable(p);
    }

    /** Like {@link #find}, failing with a message that names the worker and the buffer. */
    public Placed require(String workerId, String bufferId) {
        return find(workerId, bufferId)
                .orElseThrow(
                        () ->
                                new IllegalArgumentException(
                                        "worker "
                                                + workerId
                                                + " has no registered buffer '"
                                                + bufferId
                                                + "'"));
    }

    /** Whether every worker the slice names (its own and those it writes to) has buffers here. */
    public boolean holdsEveryWorkerOf(Slice slice) {
        for (int w = 0; w < slice.workerCount(); w++) {
            if (!byWorker.containsKey(slice.workerId(w))) {
                return false;
            }
        }
        return true;
    }

    /** Every buffer of a worker, in registration order. */
    public List<Placed> buffers(String workerId) {
        Map<String, Placed> buffers = byWorker.get(workerId);
        return buffers == null ? List.of() : List.copyOf(buffers.values());
    }

    /** Size of each segment (end of its last buffer), in first-registration order. */
    public Map<String, Long> segmentSizes() {
        return Map.copyOf(segmentSizes);
    }

    /** Segments of one worker with their sizes. */
    public Map<String, Long> segmentsOf(String workerId) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (Placed p : buffers(workerId)) {
            out.put(p.segment(), segmentSizes.get(p.segment()));
        }
        return out;
    }

    /** The registrations it was built from; equal inputs give equal directories. */
    public List<WorkerBuffers> registrations() {
        return registrations;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof BufferDirectory d && registrations.equals(d.registrations);
    }

    @Override
    public int hashCode() {
        return registrations.hashCode();
    }

    /**
     * The worker's own Transfer Engine memory that {@code segment} names, or null when the segment
     * is shared memory this loader creates.
     */
    public ForeignBuffer foreign(String segment) {
        return foreign.get(segment);
    }

    /** The worker whose buffers the segment holds, or null. */
    public String workerOfSegment(String segment) {
        return segmentWorker.get(segment);
    }
}
