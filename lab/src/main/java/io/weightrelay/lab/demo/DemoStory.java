package io.weightrelay.lab.demo;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.lab.cluster.Cluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Demands;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * The demo's story on any {@link Cluster}, on this machine or on hosts: publish {@value
 * #GENERATIONS} generations, updating every instance to each, checking every byte and collecting
 * what retired; then kill one loader per mode and bring each back on the active generation with no
 * republish. What the story saw is {@link Told}; {@link Demo} and {@link ModeResult} report it.
 */
final class DemoStory {

    static final int GENERATIONS = 3;

    private DemoStory() {}

    /**
     * What only a lab on this machine counts from here: the publishers' own tcp counters, and on
     * Mooncake where the master reports each object's replica. On hosts the interfaces' counters
     * tell what publishing sent ({@link Cluster.Published#traffic}), so {@link #NONE}.
     *
     * @param publishersTcp the bytes the publishers' segments moved over tcp so far
     * @param replicas of a generation, its objects and those in their own publisher's segment
     */
    record LocalCounters(LongSupplier publishersTcp, LongFunction<LocalReplicas.Count> replicas) {

        /** Nothing counted here: the lab runs on hosts. */
        static final LocalCounters NONE =
                new LocalCounters(() -> 0, g -> new LocalReplicas.Count(0, 0));
    }

    /**
     * What the story saw.
     *
     * @param updates every update of the story, the restarted instances' last
     * @param publishes every publish, in order
     */
    record Told(
            Map<String, String> modeByInstance,
            List<Demo.GenerationResult> generations,
            Demo.RestartResult restart,
            List<LabUpdate> updates,
            List<Cluster.Published> publishes,
            Demands demands) {}

    /** Tells the story on {@code lab}, counting what {@code counters} count too. */
    static Told tell(Cluster lab, LocalCounters counters) throws Exception {
        Map<String, String> modeByInstance = new LinkedHashMap<>();
        List<String> ids = lab.placement().instances();
        for (int i = 0; i < ids.size(); i++) {
            modeByInstance.put(ids.get(i), lab.spec().modeOf(i).name().toLowerCase(Locale.ROOT));
        }
        say("  services up; logs in %s; instances %s", lab.logs(), modeByInstance);
        Demands demands = Demands.of(lab.manifest(), lab.placement());
        List<Demo.GenerationResult> generations = new ArrayList<>();
        List<LabUpdate> updates = new ArrayList<>();
        List<Cluster.Published> publishes = new ArrayList<>();
        for (int step = 0; step < GENERATIONS; step++) {
            long tcpBefore = counters.publishersTcp().getAsLong();
            Cluster.Published published = lab.publishGeneration(step);
            long g = published.generation();
            long publishTcp = counters.publishersTcp().getAsLong() - tcpBefore;
            // Asked before the update and the collection, while the generation is whole and new.
            LocalReplicas.Count where = counters.replicas().apply(g);
            LabUpdate update = lab.updateAll().requireUpdated();
            long verified = lab.verify(update, g);
            lab.collectGarbage();
            publishes.add(published);
            updates.add(update);
            Demo.GenerationResult r =
                    new Demo.GenerationResult(
                            g,
                            published.seconds(),
                            publishTcp,
                            update.seconds(),
                            secondsByMode(update, modeByInstance),
                            update.storeBytesRead(),
                            demands.storeBytes(),
                            update.bytesReceived(),
                            demands.targetStoredBytes(),
                            verified,
                            where.objects(),
                            where.local());
            generations.add(r);
            say(
                    "  generation %d: published in %.2f s (%d bytes over tcp: one copy, in the"
                            + " publishers' own segments); every instance updated in %.2f s (%s);"
                            + " store read %.4fx what the instances need, %d bytes checked",
                    g,
                    published.seconds(),
                    publishTcp,
                    update.seconds(),
                    r.updateSecondsByMode().entrySet().stream()
                            .map(
                                    e ->
                                            String.format(
                                                    Locale.ROOT,
                                                    "%s %.2f s",
                                                    e.getKey(),
                                                    e.getValue()))
                            .collect(Collectors.joining(", ")),
                    r.storeReadRatio(),
                    verified);
            if (where.objects() > 0) {
                say(
                        "  generation %d: the Mooncake master reports %d of %d objects in their own"
                                + " publisher's segment",
                        g, where.local(), where.objects());
            }
        }
        Demo.RestartResult restart = restartOnePerMode(lab, modeByInstance, generations, updates);
        return new Told(modeByInstance, generations, restart, updates, publishes, demands);
    }

    /** One loader per mode killed and brought back: each loads the active generation alone. */
    private static Demo.RestartResult restartOnePerMode(
            Cluster lab,
            Map<String, String> modeByInstance,
            List<Demo.GenerationResult> generations,
            List<LabUpdate> updates)
            throws Exception {
        long active = generations.get(generations.size() - 1).generation();
        List<String> modes = List.copyOf(modeByInstance.values());
        List<Integer> restart = new ArrayList<>();
        for (String mode : new TreeSet<>(modes)) {
            restart.add(modes.indexOf(mode));
        }
        List<String> restarted = lab.restartInstances(restart);
        LabUpdate rebuilt = lab.updateInstances(restarted).requireUpdated();
        updates.add(rebuilt);
        long verified = lab.verify(rebuilt, active);
        // Each restarted engine rebuilds in a group of its own, so each reads what it needs.
        long needed = 0;
        for (String id : restarted) {
            List<Worker> its =
                    lab.placement().workers().stream()
                            .filter(w -> w.instance().equals(id))
                            .toList();
            needed += Demands.of(lab.manifest(), new TargetPlacement(its)).storeBytes();
        }
        say(
                "  killed the loaders of %s; the new ones loaded active generation %d alone in"
                        + " %.2f s, no republish; %d bytes checked",
                String.join(" and ", restarted), active, rebuilt.seconds(), verified);
        return new Demo.RestartResult(
                restarted, active, rebuilt.seconds(), rebuilt.storeBytesRead(), needed, verified);
    }

    /**
     * Per mode, the longest prepare + apply + post-apply of its instances (the session's consensus
     * makes them end together; the loader's own phases say which mode took longer).
     */
    private static Map<String, Double> secondsByMode(
            LabUpdate update, Map<String, String> modeByInstance) {
        Map<String, Double> out = new TreeMap<>();
        for (LabUpdate.Engine e : update.engines()) {
            PhaseDurations d = e.progress().getDurations();
            double s =
                    d == null
                            ? 0
                            : (nonNull(d.getPrepareMs())
                                            + nonNull(d.getApplyMs())
                                            + nonNull(d.getPostApplyMs()))
                                    / 1e3;
            out.merge(modeByInstance.get(e.instance()), s, Math::max);
        }
        return out;
    }

    private static long nonNull(Long v) {
        return v == null ? 0 : v;
    }

    private static final long START = System.nanoTime();

    /** A line of narration on stderr, after the seconds since the demo started. */
    static void say(String format, Object... args) {
        System.err.println(
                String.format(Locale.ROOT, "[%5.1f s] ", (System.nanoTime() - START) / 1e9)
                        + String.format(Locale.ROOT, format, args));
    }
}
