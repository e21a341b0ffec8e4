package io.weightrelay.loader.control;

import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.loader.pipeline.WorkerBuffers;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.plan.Slice;
import java.time.Duration;
import java.util.List;

/**
 * The loader's view of control-api. Every method throws {@link ControlPlaneException} when
 * control-api answers with an error or cannot be reached.
 */
public interface ControlPlane {

    /** A generation's state as control-api reports it. */
    enum GenerationState {
        /** Opened by a trainer, not committed yet. */
        OPEN,
        /** Committed, the model's newest. */
        ACTIVE,
        /** Committed, superseded by a newer one; loadable while its objects are kept. */
        RETIRED,
        /** Never committed. */
        ABORTED,
        /** Committed, but objects of it are gone (a publisher's segment died). */
        LOST;

        /** Whether a loader may load a generation in this state: committed and whole. */
        public boolean loadable() {
            return this == ACTIVE || this == RETIRED;
        }
    }

    /** A generation's state and digest. */
    record GenerationRef(
            long generation, GenerationState state, String manifestDigest, String corruptObject) {
        public GenerationRef(long generation, GenerationState state, String manifestDigest) {
            this(generation, state, manifestDigest, null);
        }
    }

    /** A resolved plan. */
    record PlanRef(String planId, boolean valid, List<String> instances) {}

    /**
     * What control-api answered one loader's prepare.
     *
     * @param buffersDigest identifies the group's receive buffers the plan was resolved against
     * @param buffers every worker's buffers in the group; empty when they are those of the digest
     *     the loader named
     * @param attempt the attempt of the group's session this prepare joined (a session that ended
     *     RESUMED_OLD is retried as the next one); every report of the update names it, so
     *     control-api never applies it to another attempt. Null from a control-api that does not
     *     count attempts: the reports then name none
     */
    record Preparation(
            GenerationRef generation,
            PlanRef plan,
            String buffersDigest,
            List<WorkerBuffers> buffers,
            Integer attempt) {

        public Preparation(
                GenerationRef generation,
                PlanRef plan,
                String buffersDigest,
                List<WorkerBuffers> buffers) {
            this(generation, plan, buffersDigest, buffers, null);
        }
    }

    /** Phases a loader reports. */
    enum Reported {
        PREPARED,
        APPLYING,
        SENT,
        APPLIED,
        POST_APPLIED,
        FAILED
    }

    /** The session barriers. */
    enum Barrier {
        PREPARED("prepared"),
        SENT("sent"),
        APPLIED("applied"),
        POST_APPLIED("post-applied");

        private final String wire;

        Barrier(String wire) {
            this.wire = wire;
        }

        public String wire() {
            return wire;
        }
    }

    /**
     * One phase report.
     *
     * @param checksums with APPLIED: the CRC32C of every range this loader read (null: none)
     * @param servesThroughFetch with PREPARED: the fetch writes nothing the engine serves from
     *     (compat or staged direct workers), so its old generation stays servable through it and
     *     only the install, after the applied barrier, replaces it: a failure before that barrier
     *     leaves the engine on its old generation, whether it served meanwhile or drained for a
     *     one-call update (control-api ends a session all of whose participants said so
     *     RESUMED_OLD)
     * @param attempt the session's attempt the report is for (null: none named, taken as the
     *     current one); the factories leave it null, {@link #inAttempt} sets it
     */
    record Report(
            String instance,
            long epoch,
            Reported phase,
            long bytesRead,
            long bytesPushed,
            long bytesReceived,
            String failingPeer,
            String error,
            RangeChecksums checksums,
            java.util.Map<String, byte[]> sent,
            Durations durations,
            boolean servesThroughFetch,
            Integer attempt) {

        public Report {
            sent = sent == null ? java.util.Map.of() : java.util.Map.copyOf(sent);
        }

        /** This report, for the session's {@code attempt} (null: none named). */
        public Report inAttempt(Integer attempt) {
            return new Report(
                    instance,
                    epoch,
                    phase,
                    bytesRead,
                    bytesPushed,
                    bytesReceived,
                    failingPeer,
                    error,
                    checksums,
                    sent,
                    durations,
                    servesThroughFetch,
                    attempt);
        }

        /**
         * APPLIED: the bytes this loader moved and the CRC32C of every range it read ({@code
         * checksums}, null with the proof off).
         */
        public static Report applied(
                String instance,
                long epoch,
                long bytesRead,
                long bytesPushed,
                long bytesReceived,
                RangeChecksums checksums) {
            return new Report(
                    instance,
                    epoch,
                    Reported.APPLIED,
                    bytesRead,
                    bytesPushed,
                    bytesReceived,
                    null,
                    null,
                    checksums,
                    null,
                    null,
                    false,
                    null);
        }

        /**
         * SENT: every write this loader makes landed; {@code sent} holds, per destination instance,
         * the encoded digests of what it wrote into that instance's buffers.
         */
        public static Report sent(String instance, long epoch, java.util.Map<String, byte[]> sent) {
            return new Report(
                    instance,
                    epoch,
                    Reported.SENT,
                    0,
                    0,
                    0,
                    null,
                    null,
                    null,
                    sent,
                    null,
                    false,
                    null);
        }

        public static Report of(String instance, long epoch, Reported phase) {
            return new Report(
                    instance, epoch, phase, 0, 0, 0, null, null, null, null, null, false, null);
        }

        /**
         * PREPARED, saying whether the engine's old generation stays servable through the fetch.
         */
        public static Report prepared(String instance, long epoch, boolean servesThroughFetch) {
            return new Report(
                    instance,
                    epoch,
                    Reported.PREPARED,
                    0,
                    0,
                    0,
                    null,
                    null,
                    null,
                    null,
                    null,
                    servesThroughFetch,
                    null);
        }

        /**
         * POST_APPLIED, with the update as its engine lived it so far: {@code durations} (null
         * fields where unknown).
         */
        public static Report postApplied(String instance, long epoch, Durations durations) {
            return new Report(
                    instance,
                    epoch,
                    Reported.POST_APPLIED,
                    0,
                    0,
                    0,
                    null,
                    null,
                    null,
                    null,
                    durations,
                    false,
                    null);
        }

        /** FAILED, naming the peer at fault (or null) and why. */
        public static Report failed(String instance, long epoch, String failingPeer, String error) {
            return new Report(
                    instance,
                    epoch,
                    Reported.FAILED,
                    0,
                    0,
                    0,
                    failingPeer,
                    error,
                    null,
                    null,
                    null,
                    false,
                    null);
        }
    }

    /**
     * An update seen as fetch and install, in milliseconds, and the part its engine spent paused,
     * as the loader saw it: what POST_APPLIED carries to the session's record.
     */
    record Durations(Long fetchMs, Long installMs, Long pauseMs) {}

    /**
     * A barrier's state after one wait.
     *
     * @param failure why the session failed, naming the object or peer (null while it has not)
     */
    /**
     * @param waiting instances that have not reached the barrier yet (some of them, when many)
     */
    record BarrierState(
            boolean open,
            boolean failed,
            String failedInstance,
            String failure,
            java.util.List<String> waiting) {
        public BarrierState {
            waiting = waiting == null ? java.util.List.of() : java.util.List.copyOf(waiting);
        }

        public BarrierState(boolean open, boolean failed, String failedInstance, String failure) {
            this(open, failed, failedInstance, failure, null);
        }

        public BarrierState(boolean open, boolean failed, String failedInstance) {
            this(open, failed, failedInstance, null, null);
        }
    }

    /**
     * Registers (or re-registers) the loader with the engine's registration (its span, when not
     * null, the rollout instance this loader serves one node of); returns its new epoch.
     */
    long registerLoader(InstanceRegistration registration);

    /** Renews the loader's registry TTL. */
    void heartbeatLoader(String instance);

    void deregisterLoader(String instance);

    GenerationRef activeGeneration(String model);

    SourceManifest manifest(GenerationId generation);

    /** This loader's slice of a plan: all a loader fetches of it. */
    Slice slice(String planId, String instance);

    /**
     * What a loader asks control-api for at prepare.
     *
     * @param instance the loader's instance: its lease, its part of the plan
     * @param leaseTtl how long its lease on the generation lasts unless renewed
     * @param phaseTimeout the session's phase deadline, should this call start it
     * @param knownBuffersDigest the digest of the group's buffers the caller holds (null: none);
     *     the answer carries the buffers only when they differ
     */
    record PrepareCall(
            String model,
            long generation,
            String group,
            String instance,
            Duration leaseTtl,
            Duration phaseTimeout,
            String knownBuffersDigest) {}

    /**
     * One call for all a prepare needs from control-api: checks that the generation is committed,
     * resolves the group's plan (which must have a part for the call's instance), starts or joins
     * the group's session with the plan's instances, and takes the instance's lease on the
     * generation last, so a refused call holds no lease.
     */
    Preparation prepare(PrepareCall call);

    void report(SessionKey session, Report report);

    /**
     * What the participants' SENT reports say they wrote into {@code instance}'s buffers: encoded
     * digests by sender instance. Complete once the sent barrier opened.
     */
    java.util.Map<String, byte[]> landed(SessionKey session, String instance);

    BarrierState awaitBarrier(SessionKey session, Barrier barrier, Duration wait);

    /**
     * {@link #report} of the phase {@code barrier} waits for, then {@link #awaitBarrier}: one round
     * trip over REST, so the last loader to arrive learns in that call that the barrier opened.
     */
    default BarrierState arrive(SessionKey session, Report report, Barrier barrier, Duration wait) {
        report(session, report);
        return awaitBarrier(session, barrier, wait);
    }

    void releaseLease(GenerationId generation, String holder);

    /**
     * Takes (or renews) {@code holder}'s lease on {@code generation} for {@code ttl}. A
     * registration drops every lease taken in the loader's name; a loader registered again while
     * its engine kept its memory takes the one on the generation it still serves again.
     */
    void acquireLease(GenerationId generation, String holder, Duration ttl);
}
