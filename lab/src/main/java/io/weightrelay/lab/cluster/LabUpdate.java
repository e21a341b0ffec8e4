package io.weightrelay.lab.cluster;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.api.loader.client.model.TransportBytes;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.hosts.LinkCounters;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * One update of some engines of a {@link Cluster}, started together: how long until the last one
 * ended, what each one reported, and on hosts what crossed every host's interfaces meanwhile.
 *
 * @param seconds from the first update request to the last engine seeing its outcome (and, on
 *     hosts, its agent checking its bytes)
 * @param engines each engine's update, in the order they were asked
 * @param traffic what crossed the hosts' interfaces during the update; empty on one machine, where
 *     every byte stays on loopback and no interface tells it apart
 */
public record LabUpdate(double seconds, List<Engine> engines, Optional<LinkCounters> traffic) {

    public LabUpdate {
        engines = List.copyOf(engines);
    }

    /**
     * One engine's update.
     *
     * @param instance the engine's rollout instance
     * @param progress what its loader reported at the end (outcome, bytes, phases, transports)
     * @param seconds from the update request to this engine seeing its outcome
     * @param bytesVerified its bytes checked against the generation as the update ended (on hosts,
     *     by its agent); 0 where the lab checks them apart ({@link Cluster#verify})
     * @param problem why this update does not count, or null: it did not end UPDATED, or its bytes
     *     are not all of the generation
     */
    public record Engine(
            String instance,
            UpdateProgress progress,
            double seconds,
            long bytesVerified,
            String problem) {

        /** An engine's update as its loader reported it; a problem unless it ended UPDATED. */
        public static Engine of(String instance, UpdateProgress p, double seconds) {
            return new Engine(instance, p, seconds, 0, failure(p));
        }

        /**
         * Why an update that did not end UPDATED failed, in the words every lab uses (the host
         * agents too); null when it ended UPDATED.
         */
        public static String failure(UpdateProgress p) {
            return p.getOutcome() == UpdateOutcome.UPDATED
                    ? null
                    : "update "
                            + p.getUpdateId()
                            + " ended "
                            + p.getOutcome()
                            + ": "
                            + p.getError()
                            + " (failing peer "
                            + p.getFailingPeer()
                            + ")";
        }

        /** Whether the update ended UPDATED (its bytes may still be wrong: see {@link #ok}). */
        public boolean updated() {
            return progress.getOutcome() == UpdateOutcome.UPDATED;
        }

        /** Ended UPDATED with every byte checked that was checked right. */
        public boolean ok() {
            return problem == null;
        }

        /** {@code of} the transports the loader's data plane used; 0 where it reported none. */
        long transport(ToLongFunction<TransportBytes> of) {
            TransportBytes t = progress.getTransport();
            return t == null ? 0 : of.applyAsLong(t);
        }
    }

    /** What each engine's loader reported, in order. */
    public List<UpdateProgress> results() {
        return engines.stream().map(Engine::progress).toList();
    }

    /** {@code of} each engine's update, summed over all. */
    public long sum(ToLongFunction<UpdateProgress> of) {
        return results().stream().mapToLong(of).sum();
    }

    /** Store bytes the engines' loaders read ({@code localRead + tcpRead}), over all. */
    public long storeBytesRead() {
        return transports(t -> t.getLocalRead() + t.getTcpRead());
    }

    /** Bytes the loaders' data planes moved over tcp as initiators (store reads and pushes). */
    public long engineTcpBytes() {
        return transports(t -> t.getTcpRead() + t.getTcpWritten());
    }

    /** Bytes the loaders' data planes moved over the local transport (reads and writes). */
    public long engineLocalBytes() {
        return transports(t -> t.getLocalRead() + t.getLocalWritten());
    }

    private long transports(ToLongFunction<TransportBytes> of) {
        return engines.stream().mapToLong(e -> e.transport(of)).sum();
    }

    /** Bytes the engines' workers received, over all. */
    public long bytesReceived() {
        return sum(p -> p.getBytesReceived() == null ? 0 : p.getBytesReceived());
    }

    /** Bytes checked as the update ended, over all (see {@link Engine#bytesVerified}). */
    public long bytesVerified() {
        return engines.stream().mapToLong(Engine::bytesVerified).sum();
    }

    /** The longest any engine waited for its outcome. */
    public double slowestSeconds() {
        return engines.stream().mapToDouble(Engine::seconds).max().orElse(0);
    }

    /** The largest of one phase duration over the engines (0 where none reported it). */
    public long slowest(Function<PhaseDurations, Long> of) {
        long slowest = 0;
        for (UpdateProgress p : results()) {
            Long ms = p.getDurations() == null ? null : of.apply(p.getDurations());
            slowest = Math.max(slowest, ms == null ? 0 : ms);
        }
        return slowest;
    }

    /** Fails naming every engine whose update does not count, with why. */
    public LabUpdate requireUpdated() {
        List<String> bad = new ArrayList<>();
        for (Engine e : engines) {
            if (!e.ok()) {
                bad.add(e.instance() + ": " + e.problem());
            }
        }
        if (!bad.isEmpty()) {
            throw new IllegalStateException("update failed: " + String.join("; ", bad));
        }
        return this;
    }
}
