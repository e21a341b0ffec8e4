package io.weightrelay.control.plan;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.control.generation.GenerationCommitted;
import io.weightrelay.control.generation.GenerationOpened;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.StoredGeneration;
import io.weightrelay.control.registry.LoaderRegistered;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.concurrent.DaemonThreads;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Resolves the plans a generation will be asked for before anyone asks: every rollout group of the
 * model with live loaders gets its plan resolved (computed, unless cached) as soon as the
 * generation is opened, while the trainers store its bytes, and again when it is committed (a cache
 * hit, unless the group's registrations changed during the publish). The group's first prepare so
 * finds its plan instead of computing it while every loader of the group waits. The same resolution
 * a prepare makes, with the same single flight: a prepare that arrives while it runs joins it. A
 * loader registering (a restarted or added engine) has its group's plan for the active generation
 * resolved once the group's registrations settle ({@link PlanProperties#eagerSettle}). Best effort:
 * a refusal (a placement the manifest refuses, no plan for a group that is being rebuilt) is logged
 * here and answered to the loaders by their own prepare, as before.
 */
@Component
class EagerPlans implements DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(EagerPlans.class);

    /**
     * Opens and commits waiting behind the one being resolved; the oldest is dropped when a newer
     * one comes (a dropped open's groups are resolved again at its commit).
     */
    private static final int QUEUED = 2;

    private final PlanService plans;
    private final GenerationQueries generations;
    private final Registry registry;
    private final PlanProperties properties;
    private final ThreadPoolExecutor worker =
            DaemonThreads.single(
                    "plan-eager", QUEUED, new ThreadPoolExecutor.DiscardOldestPolicy());

    /** Times the settling of groups whose loaders register; hands each resolution to the worker. */
    private final ScheduledExecutorService settle =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("plan-settle"));

    /** Per model and group, the resolution waiting for its registrations to settle. */
    private final Map<String, ScheduledFuture<?>> settling = new ConcurrentHashMap<>();

    EagerPlans(
            PlanService plans,
            GenerationQueries generations,
            Registry registry,
            PlanProperties properties) {
        this.plans = plans;
        this.generations = generations;
        this.registry = registry;
        this.properties = properties;
    }

    @EventListener
    void opened(GenerationOpened event) {
        if (properties.eager()) {
            worker.execute(() -> resolveGroups(event.id(), "open"));
        }
    }

    @EventListener
    void committed(GenerationCommitted event) {
        if (properties.eager()) {
            worker.execute(() -> resolveGroups(event.id(), "commit"));
        }
    }

    /**
     * A loader registered: its group's plan for the active generation is resolved once no other
     * loader of the group registered for {@link PlanProperties#eagerSettle}. Each registration
     * restarts the wait, so a group registering loader by loader is planned once.
     */
    @EventListener
    void registered(LoaderRegistered event) {
        if (!properties.eager() || properties.eagerSettle().isZero()) {
            return;
        }
        String model = event.model();
        String group = event.group();
        try {
            settling.compute(
                    model + "\n" + group,
                    (key, pending) -> {
                        if (pending != null) {
                            pending.cancel(false);
                        }
                        return settle.schedule(
                                () -> worker.execute(() -> resolveActive(model, group)),
                                properties.eagerSettle().toMillis(),
                                TimeUnit.MILLISECONDS);
                    });
        } catch (RejectedExecutionException e) {
            // Shutting down: the registration stands; its group's first prepare resolves the plan.
            log.debug("plan of group {} of {} not scheduled: {}", group, model, e.toString());
        }
    }

    private void resolveActive(String model, String group) {
        try {
            Optional<Generation> active = generations.activeIfAny(model);
            if (active.isEmpty()) {
                // nothing to load yet: the next open and commit resolve the group's plan
                return;
            }
            GenerationId id = new GenerationId(model, active.get().getGeneration());
            StoredGeneration g = generations.load(id).requireNotLost();
            resolveGroup(model, g, group, "the settling of its registrations");
        } catch (RuntimeException e) {
            log.info(
                    "plan of group {} of {} not resolved after its registrations: {}",
                    group,
                    model,
                    e.toString());
        }
    }

    private void resolveGroups(GenerationId id, String at) {
        try {
            StoredGeneration g = generations.load(id).requireNotLost();
            TreeSet<String> groups = new TreeSet<>();
            for (Loader l : registry.liveLoaders(id.model(), null)) {
                groups.add(l.getGroup());
            }
            for (String group : groups) {
                resolveGroup(id.model(), g, group, "the " + at);
            }
        } catch (RuntimeException e) {
            log.info(
                    "plans not resolved at the {} of {}/{}: {}",
                    at,
                    id.model(),
                    id.generation(),
                    e.toString());
        }
    }

    /** Resolves one group's plan of {@code g}, logging the outcome; never throws. */
    private void resolveGroup(String model, StoredGeneration g, String group, String at) {
        long generation = g.view().getGeneration();
        long started = System.nanoTime();
        try {
            var plan = plans.resolve(model, g, group).summary();
            log.info(
                    "plan {} of group {} resolved at {} of {}/{} in {} ms ({})",
                    plan.getPlanId(),
                    group,
                    at,
                    model,
                    generation,
                    (System.nanoTime() - started) / 1_000_000,
                    Boolean.TRUE.equals(plan.getCached()) ? "cached" : "computed");
        } catch (RuntimeException e) {
            log.info(
                    "plan of group {} not resolved at {} of {}/{} (its loaders' prepare will say"
                            + " why): {}",
                    group,
                    at,
                    model,
                    generation,
                    e.getMessage());
        }
    }

    /**
     * Whether no open's or commit's resolution is queued or running (approximate, as the executor's
     * counts are: ask twice some milliseconds apart). Tests wait for it before they count plan
     * computations, so a commit's resolution cannot run after loaders they register next.
     */
    boolean idle() {
        return worker.getActiveCount() == 0 && worker.getQueue().isEmpty();
    }

    @Override
    public void destroy() {
        settle.shutdownNow();
        worker.shutdownNow();
    }
}
