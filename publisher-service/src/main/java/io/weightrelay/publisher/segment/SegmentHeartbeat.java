package io.weightrelay.publisher.segment;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.publisher.publish.PublishProblems;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.problem.RelayException;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;

/**
 * Keeps this segment registered as a live owner in control-api's registry (register once the
 * service is ready, heartbeat within the TTL, register again when the registry forgot it, as after
 * Redis lost its data) and its data-plane descriptor in Redis (published again when lost). A
 * control-api that is away only delays this; publishing does not depend on it.
 *
 * <p>After a restart that re-created the segment, it also reports every generation whose objects
 * the previous owner held ({@link SegmentOwner#lostOnRestart}) to control-api as lost, retrying
 * until control-api has taken each one, so none stays ACTIVE with bytes that are gone. On Mooncake
 * the capacity is the segment the agent mounted, which dies with the agent while this process
 * lives: every beat asks whether it did ({@link SegmentOwner#capacityLost}; a dead agent is started
 * again with a new, empty segment) and reports what the dead one held the same way, naming it.
 *
 * <p>Each heartbeat also frees the memory of the generations control-api forgot when its Redis lost
 * its data ({@link ForgottenGenerations}): the heartbeat's answer carries the Redis incarnation
 * mark that tells such a loss from a normal collection.
 */
@Component
final class SegmentHeartbeat implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SegmentHeartbeat.class);

    private final SegmentOwner owner;
    private final SegmentProperties properties;
    private final ControlPlane control;
    private final DataplaneSettings settings;
    private final Environment environment;
    private final ForgottenGenerations forgotten;
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("segment-heartbeat"));
    private volatile boolean registered;

    /**
     * The Mooncake store endpoint the last registration carried: an agent started again mounts its
     * capacity under a new one, and control-api finds this owner's replicas only by the one
     * registered, so a change registers again instead of renewing.
     */
    private volatile String registeredStoreEndpoint;

    private static final Comparator<String> OLDEST_FIRST =
            Comparator.comparing((String mg) -> mg.substring(0, mg.lastIndexOf('/')))
                    .thenComparingLong(mg -> Long.parseLong(mg.substring(mg.lastIndexOf('/') + 1)));

    /**
     * {@code model/generation} -> how many of its objects were lost and why; removed once reported.
     */
    private final Map<String, Unreported> unreported = new ConcurrentHashMap<>();

    /** A generation's loss not yet taken by control-api. */
    private record Unreported(long objects, String why) {}

    SegmentHeartbeat(
            SegmentOwner owner,
            SegmentProperties properties,
            ControlPlane control,
            DataplaneSettings settings,
            Environment environment,
            MeterRegistry meters) {
        this.owner = owner;
        this.properties = properties;
        this.control = control;
        this.settings = settings;
        this.environment = environment;
        this.forgotten = new ForgottenGenerations(owner, control, meters);
    }

    @EventListener(ApplicationReadyEvent.class)
    void start() {
        String restarted =
                "the publisher of node '" + owner.node() + "' restarted and re-created its segment";
        for (String key : owner.lostOnRestart()) {
            lose(SegmentOwner.generationOf(key), 1, restarted);
        }
        // always: on Mooncake the agent can die (its segment with it) while this process lives
        timer.scheduleWithFixedDelay(
                this::reportLost, 0, properties.heartbeat().toMillis(), TimeUnit.MILLISECONDS);
        if (!owner.ownsSegment()) {
            // Client only: nothing to register; keep the storage units to put into current.
            timer.schedule(this::preferUnits, 0, TimeUnit.MILLISECONDS);
            return;
        }
        if (!properties.register()) {
            return;
        }
        long period = properties.heartbeat().toMillis();
        timer.scheduleWithFixedDelay(this::beat, 0, period, TimeUnit.MILLISECONDS);
    }

    private void beat() {
        try {
            if (owner.reannounce()) {
                log.warn(
                        "Redis had lost the descriptor of segment '{}' (restarted without its"
                                + " data): published again",
                        owner.segmentName());
            }
        } catch (RuntimeException e) {
            log.warn(
                    "cannot check the descriptor of segment '{}': {}",
                    owner.segmentName(),
                    e.getMessage());
        }
        boolean storageUnit = SegmentProperties.STORAGE_UNIT.equals(properties.role());
        // Asked before the mark is read: a generation unknown now, while the mark read afterwards
        // is the one it was last known under, was collected normally (see ForgottenGenerations).
        Optional<Map<String, Boolean>> known = storageUnit ? Optional.empty() : forgotten.ask();
        String mark = null;
        boolean answered = false;
        try {
            String storeEndpoint = owner.storeEndpoint().orElse(null);
            boolean renew = registered && Objects.equals(storeEndpoint, registeredStoreEndpoint);
            Optional<ControlPlane.SegmentAnswer> answer =
                    renew ? control.heartbeatSegment(owner.segmentName()) : Optional.empty();
            if (answer.isEmpty()) {
                answer =
                        Optional.of(
                                control.registerSegment(
                                        new ControlPlane.SegmentOffer(
                                                owner.segmentName(),
                                                owner.node(),
                                                owner.endpoint(),
                                                owner.size(),
                                                adminUrl(),
                                                storageUnit,
                                                storeEndpoint)));
                if (!registered) {
                    log.info("segment '{}' registered with control-api", owner.segmentName());
                } else if (!renew) {
                    log.info(
                            "segment '{}' registered again: its Mooncake store endpoint is now {}"
                                    + " (was {})",
                            owner.segmentName(),
                            storeEndpoint,
                            registeredStoreEndpoint);
                }
                registeredStoreEndpoint = storeEndpoint;
                registered = true;
            }
            mark = answer.get().incarnation();
            answered = true;
        } catch (RuntimeException e) {
            registered = false;
            log.warn("segment '{}' not registered yet: {}", owner.segmentName(), e.getMessage());
        }
        if (!storageUnit) {
            try {
                forgotten.settle(known, answered, mark);
            } catch (RuntimeException e) {
                log.warn(
                        "cannot free what Redis forgot from segment '{}' yet: {}",
                        owner.segmentName(),
                        e.toString());
            }
        }
    }

    /**
     * A client-only publisher's puts prefer the storage units of its own node (the local transport:
     * publishing moves no network byte), then every other unit, by name.
     */
    private void preferUnits() {
        long next = properties.heartbeat().toMillis();
        try {
            List<String> ordered = unitOrder(owner.node(), control.storageUnits());
            if (!ordered.equals(owner.preferredSegments())) {
                log.info("client-only publisher '{}' stores into {}", owner.segmentName(), ordered);
                owner.preferSegments(ordered);
            }
            if (ordered.isEmpty()) {
                next = Math.min(next, 500); // no unit registered yet: look again soon
            }
        } catch (RuntimeException e) {
            log.warn("storage units not known yet: {}", e.getMessage());
            next = Math.min(next, 500);
        } finally {
            if (!timer.isShutdown()) {
                timer.schedule(this::preferUnits, next, TimeUnit.MILLISECONDS);
            }
        }
    }

    /** Units of {@code node} first, then the others; each group by name. */
    static List<String> unitOrder(String node, List<ControlPlane.SegmentPeer> units) {
        List<String> local = new java.util.ArrayList<>();
        List<String> other = new java.util.ArrayList<>();
        for (ControlPlane.SegmentPeer u : units) {
            (u.node().equals(node) ? local : other).add(u.segment());
        }
        java.util.Collections.sort(local);
        java.util.Collections.sort(other);
        local.addAll(other);
        return List.copyOf(local);
    }

    /**
     * Asks the owner whether its capacity lost what was stored in it (a Mooncake agent that died),
     * and adds what it lost to the generations to report.
     */
    private void checkCapacity() {
        try {
            owner.capacityLost()
                    .ifPresent(
                            lost -> lost.generations().forEach((g, n) -> lose(g, n, lost.why())));
        } catch (RuntimeException e) {
            log.warn(
                    "cannot check the store capacity of '{}' yet: {}",
                    owner.segmentName(),
                    e.getMessage());
        }
    }

    /** Adds {@code objects} lost objects of generation {@code g} to report, the first why kept. */
    private void lose(String g, long objects, String why) {
        unreported.merge(
                g,
                new Unreported(objects, why),
                (a, b) -> new Unreported(a.objects() + b.objects(), a.why()));
    }

    private void reportLost() {
        checkCapacity();
        // Oldest first, by number: a lost active generation falls back to the newest earlier
        // whole one, so the earlier ones this restart lost must be known as lost by then.
        TreeMap<String, Unreported> ordered = new TreeMap<>(OLDEST_FIRST);
        ordered.putAll(unreported);
        for (Map.Entry<String, Unreported> e : ordered.entrySet()) {
            GenerationId generation = GenerationId.ofPath(e.getKey());
            try {
                control.loseGeneration(
                        generation,
                        owner.segmentName(),
                        e.getValue().objects(),
                        e.getValue().why());
                unreported.remove(e.getKey());
                log.warn(
                        "generation {} of {} reported lost to control-api ({} objects were in"
                                + " segment '{}')",
                        generation.generation(),
                        generation.model(),
                        e.getValue().objects(),
                        owner.segmentName());
            } catch (RuntimeException ex) {
                if (ex instanceof RelayException r
                        && r.kind() == PublishProblems.GENERATION_NOT_FOUND) {
                    unreported.remove(e.getKey()); // collected already: nothing left to mark
                    continue;
                }
                log.warn(
                        "generation {} of {} not reported lost yet: {}",
                        generation.generation(),
                        generation.model(),
                        ex.getMessage());
                return;
            }
        }
    }

    /**
     * {@code relay.segment.admin-url}, else derived from {@code relay.dataplane.advertise-host}.
     */
    private String adminUrl() {
        return settings.advertisedUrl(properties.adminUrl(), environment, 8081);
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
