package io.weightrelay.loader.instance;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.model.DirectInstall;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.pipeline.BufferDirectory;
import io.weightrelay.loader.pipeline.ReadStaging;
import io.weightrelay.loader.registration.RegistrationKey;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.loader.registration.ServingCopies;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemKind;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Service;

/**
 * Holds the one instance this loader serves and guards its life cycle: registration (a new epoch
 * from control-api, which invalidates the registrations of older epochs), teardown (exact-base
 * unregistration), and the update lock (at most one update at a time, none while paused).
 */
@Service
public class InstanceService {
    private static final Logger log = LoggerFactory.getLogger(InstanceService.class);

    private final ControlPlane control;
    private final DataplaneHolder dataplane;
    private final LoaderProperties properties;
    private Instance current;

    /** What the engine registered {@link #current} with, to register it again when forgotten. */
    private InstanceRegistration registration;

    private boolean updating;

    public InstanceService(
            ControlPlane control, DataplaneHolder dataplane, LoaderProperties properties) {
        this.control = control;
        this.dataplane = dataplane;
        this.properties = properties;
    }

    /**
     * Held while a registration runs, its buffers' creation included; never by the heartbeat. The
     * instance's own monitor is taken only for the short bookkeeping, so a heartbeat (which reads
     * {@link #current()}) is never held up by the page faults of a large buffer.
     */
    private final Object registering = new Object();

    /**
     * Registers (or re-registers: a reconnect) the instance, then creates and pre-faults its
     * workers' receive segments and the loader's read staging, so that its first update reuses them
     * instead of paying for them. Returns once they exist: an engine that starts an update after
     * registering finds them ready. A segment that cannot be created now (shared memory full, say)
     * is left to the first prepare, which fails naming it.
     */
    public Instance register(InstanceRegistration r) {
        synchronized (registering) {
            long started = System.nanoTime();
            Instance registered = registerLocked(r);
            long registeredAt = System.nanoTime();
            createReceiveSegments(registered);
            long segmentsAt = System.nanoTime();
            createStaging(registered);
            long done = System.nanoTime();
            // Where a new engine's wait before its first update goes (bench update's
            // buffer_setup_s and first_weights_s).
            log.info(
                    "registration of {} took {} ms: data plane open {} ms, control-api {} ms,"
                            + " receive segments {} ms, read staging {} ms",
                    registered.instanceId(),
                    (done - started) / 1_000_000,
                    openNanos / 1_000_000,
                    (registeredAt - started - openNanos) / 1_000_000,
                    (segmentsAt - registeredAt) / 1_000_000,
                    (done - segmentsAt) / 1_000_000);
            return registered;
        }
    }

    /**
     * The read staging at its {@linkplain ReadStaging#upperBound upper bound} for the instance's
     * workers: what the loader will read is known only from a plan, and finding out at the first
     * prepare would put the staging's page faults back inside the first update. A loader whose
     * plans read nothing holds it unused; one whose plan needs more grows it at that prepare.
     */
    private void createStaging(Instance instance) {
        long bytes = ReadStaging.upperBound(properties.stagingSlots(), instance.workerIds().size());
        long started = System.nanoTime();
        try {
            dataplane
                    .registrations()
                    .acquirePersistent(
                            ReadStaging.key(instance.epoch(), instance.instanceId(), bytes));
        } catch (RuntimeException e) {
            log.warn(
                    "read staging of {} not created at registration ({}); the first update"
                            + " creates what its plan needs",
                    instance.instanceId(),
                    e.getMessage());
            return;
        }
        log.info(
                "read staging of {} ready: {} bytes in {} ms",
                instance.instanceId(),
                bytes,
                (System.nanoTime() - started) / 1_000_000);
    }

    /** The registrations of the instance's workers' receive segments, one per segment. */
    private static List<RegistrationKey> receiveKeys(Instance instance) {
        BufferDirectory directory = new BufferDirectory(instance.buffers());
        List<RegistrationKey> keys = new ArrayList<>();
        for (String worker : instance.workerIds()) {
            for (Map.Entry<String, Long> s : directory.segmentsOf(worker).entrySet()) {
                keys.add(
                        new RegistrationKey(
                                instance.epoch(),
                                instance.instanceId(),
                                worker,
                                s.getKey(),
                                s.getValue(),
                                directory.foreign(s.getKey())));
            }
        }
        return keys;
    }

    private void createReceiveSegments(Instance instance) {
        RegistrationManager<Segment> registrations = dataplane.registrations();
        Set<String> direct = Set.copyOf(instance.directWorkerIds());
        long started = System.nanoTime();
        long bytes = 0;
        for (RegistrationKey key : receiveKeys(instance)) {
            String worker = key.device();
            try {
                Segment segment = registrations.acquirePersistent(key);
                bytes += key.size();
                if (segment == null) {
                    continue;
                }
                if (instance.staged() && direct.contains(worker)) {
                    // The engine's weights: made and faulted now, not in its pause (a segment kept
                    // from the engine's previous registration keeps its serving copy too).
                    ServingCopies.create(segment.shmPath(), key.size());
                    bytes += key.size();
                } else {
                    // Kept from a registration that staged it: the new one serves from the
                    // segment itself.
                    ServingCopies.delete(segment.shmPath());
                }
            } catch (RuntimeException e) {
                log.warn(
                        "receive segment {} of {} not created at registration ({}); the first"
                                + " update creates it",
                        key.base(),
                        worker,
                        e.getMessage());
            }
        }
        log.info(
                "receive segments of {} ready: {} bytes in {} ms",
                instance.instanceId(),
                bytes,
                (System.nanoTime() - started) / 1_000_000);
    }

    private synchronized Instance registerLocked(InstanceRegistration r) {
        if (updating) {
            throw InstanceProblems.UPDATE_RUNNING.exception(
                    "re-registration must wait until the running update ends");
        }
        validate(r);
        long opening = System.nanoTime();
        Dataplane dp = dataplane.open(r.getNode());
        openNanos = System.nanoTime() - opening;
        for (WorkerPlacement w : r.getWorkers()) {
            for (ReceiveBuffer b : w.getBuffers()) {
                if (b.getTransferEngine() != null
                        && dp.config().engine() != DataplaneEngine.MOONCAKE) {
                    throw InstanceProblems.INVALID_REGISTRATION.exception(
                            "buffer "
                                    + b.getBufferId()
                                    + " of worker "
                                    + w.getWorkerId()
                                    + " is memory of the Transfer Engine at "
                                    + b.getTransferEngine().getSegment()
                                    + ": only the Mooncake engine"
                                    + " (relay.dataplane.engine=mooncake) writes there");
                }
            }
        }
        long epoch;
        try {
            epoch = control.registerLoader(r);
        } catch (ControlPlaneException e) {
            if (e.refusedInput()) {
                // The engine's registration itself is wrong (a placement control-api refuses):
                // pass control-api's problem type and detail on, not a retryable 503.
                throw ProblemKind.of(
                                e.problemType(),
                                HttpStatus.valueOf(e.status()),
                                "Registration refused by control-api")
                        .exception(e.detail(), e);
            }
            throw CommonProblems.UNAVAILABLE.exception(e.getMessage(), e);
        }
        RegistrationManager<Segment> registrations = dataplane.registrations();
        if (current != null && !current.instanceId().equals(r.getInstanceId())) {
            registrations.unregisterInstance(current.instanceId());
        }
        Instance before = current;
        boolean same = before != null && before.instanceId().equals(r.getInstanceId());
        // When control-api forgot this loader (Redis lost its data) the engine still holds what it
        // held, and stays paused if it was.
        boolean engineKept = same && forgotten;
        Instance next =
                Instance.registered(
                        r,
                        epoch,
                        engineKept ? before.generation() : null,
                        engineKept && before.paused());
        if (same && forgotten) {
            int kept = registrations.carryOver(r.getInstanceId(), epoch);
            log.info(
                    "instance {} registered again at epoch {} ({} registrations kept: the engine's"
                            + " memory did not change)",
                    r.getInstanceId(),
                    epoch,
                    kept);
        } else {
            // A restarted engine registers its receive buffers again: those it declares as before
            // (same worker, segment and size) keep their memory under a new incarnation, so no
            // transfer meant for the old engine lands in them, and none is made and pre-faulted
            // again (first touch of new shared memory ran at 0.08-2.4 GB/s on a VM, 25 s for four
            // workers). The loader's read staging is its own memory and is kept as it is (a new one
            // would be made and pre-faulted again, 384 MiB for two workers).
            int renewed =
                    same ? registrations.renew(r.getInstanceId(), epoch, receiveKeys(next)) : 0;
            int kept =
                    same
                            ? registrations.carryOverDevice(
                                    r.getInstanceId(), ReadStaging.DEVICE, epoch)
                            : 0;
            int invalidated = registrations.invalidateExcept(r.getInstanceId(), epoch);
            log.info(
                    "instance {} registered at epoch {} ({} receive segments kept under a new"
                            + " incarnation, {} registrations of other epochs invalidated, {} of"
                            + " its read staging kept)",
                    r.getInstanceId(),
                    epoch,
                    renewed,
                    invalidated,
                    kept);
        }
        current = next;
        registration = r;
        return current;
    }

    /** How long the last registration waited for the data plane to open (0 when it was open). */
    private long openNanos;

    /** Set while {@link #registerAgain()} replays the engine's registration. */
    private boolean forgotten;

    /**
     * Registers the instance again, with what the engine registered it with, when control-api no
     * longer knows it (its heartbeat answered {@code loader-not-found}: Redis lost its data, or the
     * loader was away longer than the registry's TTL). A new epoch, the same workers; what the
     * engine holds and whether it is paused are kept. Does nothing while an update runs (its
     * reports are refused with the old epoch anyway, and the next heartbeat tries again) or when no
     * engine registered.
     *
     * @return the new epoch, or -1 when nothing was registered
     */
    public synchronized long registerAgain() {
        if (current == null || registration == null || updating) {
            return -1;
        }
        Instance again;
        forgotten = true;
        try {
            // The engine's memory did not change: its registrations carry over, none is made.
            again = registerLocked(registration);
        } finally {
            forgotten = false;
        }
        Long held = again.generation();
        if (held != null) {
            // The registration dropped the leases taken in this loader's name; the generation the
            // engine still serves is held again, as a loader holds it after its update.
            try {
                control.acquireLease(
                        new GenerationId(again.model(), held),
                        again.instanceId(),
                        properties.leaseTtl());
            } catch (ControlPlaneException e) {
                log.warn(
                        "loader {} serves generation {} of {} but could not lease it again: {}",
                        again.instanceId(),
                        held,
                        again.model(),
                        e.getMessage());
            }
        }
        return again.epoch();
    }

    private static void validate(InstanceRegistration r) {
        Set<String> workers = new HashSet<>();
        for (WorkerPlacement w : r.getWorkers()) {
            if (!workers.add(w.getWorkerId())) {
                throw InstanceProblems.INVALID_REGISTRATION.exception(
                        "worker " + w.getWorkerId() + " is listed twice");
            }
            if (!w.getNode().equals(r.getNode())) {
                throw InstanceProblems.INVALID_REGISTRATION.exception(
                        "worker "
                                + w.getWorkerId()
                                + " is on node "
                                + w.getNode()
                                + ", the instance on "
                                + r.getNode());
            }
            if (w.getPlacement() != null) {
                throw InstanceProblems.INVALID_REGISTRATION.exception(
                        "worker "
                                + w.getWorkerId()
                                + ": the loader takes fragments inline; it stores them with"
                                + " control-api as a template itself");
            }
            List<TargetFragment> fragments =
                    w.getFragments() == null ? List.of() : w.getFragments();
            if (w.getMode() == ConsumeMode.COMPAT && !fragments.isEmpty()) {
                throw InstanceProblems.INVALID_REGISTRATION.exception(
                        "compat worker "
                                + w.getWorkerId()
                                + " receives every tensor whole; it lists no fragments");
            }
            Set<String> buffers = new HashSet<>();
            for (ReceiveBuffer b : w.getBuffers()) {
                buffers.add(b.getBufferId());
                if (b.getTransferEngine() != null && w.getMode() != ConsumeMode.DIRECT) {
                    // the loader writes a compat image's header and fans it out on its node
                    // from memory it maps, which a worker's own Transfer Engine memory is not
                    throw InstanceProblems.INVALID_REGISTRATION.exception(
                            "worker "
                                    + w.getWorkerId()
                                    + ": a buffer in the worker's own Transfer Engine ("
                                    + b.getBufferId()
                                    + ") is for a parameter-direct worker only");
                }
                if (b.getTransferEngine() != null && r.getDirectInstall() == DirectInstall.STAGED) {
                    // A staged worker serves from a serving copy the loader makes beside its
                    // receive segment; a worker's own Transfer Engine memory is the engine's, not
                    // a segment the loader holds, so the copy would be of the loader's read-back
                    // and the engine would never serve what it installs.
                    throw InstanceProblems.INVALID_REGISTRATION
                            .exception(
                                    "worker "
                                            + w.getWorkerId()
                                            + ": buffer "
                                            + b.getBufferId()
                                            + " is memory of the worker's own Transfer Engine at "
                                            + b.getTransferEngine().getSegment()
                                            + ", which a staged instance cannot serve from (the"
                                            + " loader installs into a serving copy of a segment"
                                            + " it holds); register with directInstall: inPlace")
                            .with("worker", w.getWorkerId())
                            .with("buffer", b.getBufferId());
                }
            }
            for (TargetFragment f : fragments) {
                if (!buffers.contains(f.getBufferId())) {
                    throw InstanceProblems.INVALID_REGISTRATION.exception(
                            "worker "
                                    + w.getWorkerId()
                                    + ": fragment of "
                                    + f.getTensor()
                                    + " names unknown buffer "
                                    + f.getBufferId());
                }
            }
        }
        try {
            new BufferDirectory(Instance.directoryInput(r.getWorkers()));
        } catch (IllegalArgumentException e) {
            throw InstanceProblems.INVALID_REGISTRATION.exception(e.getMessage());
        }
    }

    /** The instance, if registered. */
    public synchronized Optional<Instance> current() {
        return Optional.ofNullable(current);
    }

    public synchronized Instance require() {
        if (current == null) {
            throw InstanceProblems.NOT_REGISTERED.exception("register the instance first");
        }
        return current;
    }

    /**
     * Teardown: unregisters exactly the bases this instance registered and leaves the group. Waits
     * for a registration whose buffers are being created, so none is left behind.
     */
    public List<String> teardown() {
        synchronized (registering) {
            return teardownLocked();
        }
    }

    private synchronized List<String> teardownLocked() {
        Instance instance = require();
        if (updating) {
            throw InstanceProblems.UPDATE_RUNNING.exception("teardown must wait for the update");
        }
        List<String> bases =
                dataplane.registrations().unregisterInstance(instance.instanceId()).stream()
                        .map(k -> k.base())
                        .toList();
        try {
            control.deregisterLoader(instance.instanceId());
        } catch (ControlPlaneException e) {
            log.warn(
                    "deregistering {} from control-api failed: {}",
                    instance.instanceId(),
                    e.getMessage());
        }
        if (instance.generation() != null) {
            try {
                control.releaseLease(
                        new GenerationId(instance.model(), instance.generation()),
                        instance.instanceId());
            } catch (ControlPlaneException e) {
                log.warn(
                        "releasing the lease of {} failed: {}",
                        instance.instanceId(),
                        e.getMessage());
            }
        }
        current = null;
        return bases;
    }

    /**
     * Takes the update lock.
     *
     * @return the instance as the update starts
     */
    public synchronized Instance beginUpdate() {
        Instance instance = require();
        if (updating) {
            throw InstanceProblems.UPDATE_RUNNING.exception("an update is already running");
        }
        if (instance.paused()) {
            throw CommonProblems.CONFLICT.exception(
                    "instance "
                            + instance.instanceId()
                            + " is paused for a rebuild after a failed apply; re-register it"
                            + " (no in-place retry)");
        }
        updating = true;
        return instance;
    }

    /** Ends the update: success advances the generation, a failed apply pauses. */
    public synchronized void endUpdate(long epoch, Long advancedTo, boolean pause) {
        updating = false;
        if (current == null || current.epoch() != epoch) {
            return; // torn down or re-registered meanwhile: the old epoch's outcome is moot
        }
        if (advancedTo != null) {
            current = current.withGeneration(advancedTo);
        }
        if (pause) {
            current = current.asPaused();
        }
    }

    public synchronized boolean updating() {
        return updating;
    }
}
