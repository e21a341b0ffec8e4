package io.weightrelay.lab.demo;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.api.publisher.client.model.TransportCounters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.lab.cluster.MooncakeServices;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Demands;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.trainer.client.PublisherClient;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

/**
 * {@code ./relay demo [--model M] [--instances I] [--tp P] [--mode both|compat|direct] [--engine
 * builtin|mooncake] [--json]}: starts one lab (control-api, two publishers on two trainer node
 * labels, one loader per rollout instance on two rollout node labels, all real services in their
 * own JVMs on loopback) whose instances serve both modes at once by default (even instances in
 * compatibility mode, odd ones parameter-direct), then publishes three generations, updating every
 * instance to each and checking every byte, and finally kills one loader per mode and brings each
 * back on the active generation with no republish. Narration goes to stderr; the report table to
 * stdout, or with {@code --json} one JSON line per generation and a summary line last. Ctrl-C stops
 * every service the demo started. With {@code --hosts} the story runs on several hosts of this
 * machine instead ({@link HostsDemo}).
 *
 * <p>With {@code --engine mooncake} every service runs on {@code relay.dataplane.engine=mooncake}
 * against a {@code mooncake_master} of the pinned wheel ({@link MooncakeLab}: a network namespace
 * of its own, so root only). The story runs unchanged, the loader restart included (a killed
 * loader's successor takes its receive segments' names over); it takes no checkpoint, which
 * Mooncake also refuses for now. After each publish the demo also asks the master where every
 * object's replica lives ({@link LocalReplicas}) and reports the share in its own publisher's
 * segment ({@code local_replica_ratio}).
 */
public final class Demo {

    private static final int GENERATIONS = 3;

    /** What one generation showed. */
    public record GenerationResult(
            long generation,
            double publishSeconds,
            long publishTcpBytes,
            double updateSeconds,
            Map<String, Double> updateSecondsByMode,
            long storeBytesRead,
            long storeBytesNeeded,
            long bytesReceived,
            long targetStoredBytes,
            long bytesVerified,
            long objectsLocated,
            long objectsLocal) {

        public double storeReadRatio() {
            return ratio(storeBytesRead, storeBytesNeeded);
        }

        /**
         * The share of the generation's objects whose replica the Mooncake master reports in their
         * own publisher's segment; only on Mooncake ({@code objectsLocated > 0}).
         */
        public double localReplicaRatio() {
            return ratio(objectsLocal, objectsLocated);
        }

        boolean verified() {
            return bytesVerified > 0
                    && storeBytesRead == storeBytesNeeded
                    && bytesReceived == targetStoredBytes;
        }

        String json() {
            return String.format(
                    Locale.ROOT,
                    "{\"generation\":%d,\"publish_s\":%.3f,\"publish_tcp_bytes\":%d,"
                            + "\"update_s\":%.3f,\"update_s_by_mode\":%s,\"store_read_bytes\":%d,"
                            + "\"store_bytes_needed\":%d,\"store_read_ratio\":%.4f,"
                            + "\"bytes_received\":%d,\"target_stored_bytes\":%d,"
                            + "\"bytes_verified\":%d%s}",
                    generation,
                    publishSeconds,
                    publishTcpBytes,
                    updateSeconds,
                    secondsJson(updateSecondsByMode),
                    storeBytesRead,
                    storeBytesNeeded,
                    storeReadRatio(),
                    bytesReceived,
                    targetStoredBytes,
                    bytesVerified,
                    objectsLocated == 0
                            ? ""
                            : String.format(
                                    Locale.ROOT,
                                    ",\"objects_located\":%d,\"objects_local\":%d,"
                                            + "\"local_replica_ratio\":%.4f",
                                    objectsLocated,
                                    objectsLocal,
                                    localReplicaRatio()));
        }
    }

    /** The restarted instances' update: each alone, from the store, with no republish. */
    public record RestartResult(
            List<String> instances,
            long generation,
            double updateSeconds,
            long storeBytesRead,
            long storeBytesNeeded,
            long bytesVerified) {

        public double storeReadRatio() {
            return ratio(storeBytesRead, storeBytesNeeded);
        }

        boolean verified() {
            return bytesVerified > 0 && storeBytesRead == storeBytesNeeded;
        }
    }

    /** The whole run. */
    public record Report(
            DataplaneEngine engine,
            String model,
            int instances,
            int tp,
            Map<String, String> modeByInstance,
            List<GenerationResult> generations,
            RestartResult restart,
            double seconds) {

        public boolean verified() {
            return generations.size() == GENERATIONS
                    && generations.stream().allMatch(GenerationResult::verified)
                    && restart.verified()
                    && publishTcpBytes() == 0;
        }

        public long publishTcpBytes() {
            return generations.stream().mapToLong(GenerationResult::publishTcpBytes).sum();
        }

        public double minStoreReadRatio() {
            double min = restart.storeReadRatio();
            for (GenerationResult g : generations) {
                min = Math.min(min, g.storeReadRatio());
            }
            return min;
        }

        public double maxStoreReadRatio() {
            double max = restart.storeReadRatio();
            for (GenerationResult g : generations) {
                max = Math.max(max, g.storeReadRatio());
            }
            return max;
        }

        public long bytesVerified() {
            return generations.stream().mapToLong(GenerationResult::bytesVerified).sum()
                    + restart.bytesVerified();
        }

        public List<String> modes() {
            return modeByInstance.values().stream().distinct().sorted().toList();
        }

        /**
         * Over every generation, the share of objects whose replica the Mooncake master reports in
         * their own publisher's segment; 0 on the built-in engine (not asked).
         */
        public double localReplicaRatio() {
            return ratio(
                    generations.stream().mapToLong(GenerationResult::objectsLocal).sum(),
                    generations.stream().mapToLong(GenerationResult::objectsLocated).sum());
        }

        public String json() {
            return String.format(
                    Locale.ROOT,
                    "{\"engine\":\"%s\",\"model\":\"%s\",\"instances\":%d,\"tp\":%d,\"modes\":[%s],"
                            + "\"mode_by_instance\":{%s},"
                            + "\"generations\":[%s],\"publish_s\":[%s],\"update_s_by_mode\":{%s},"
                            + "\"restarted\":[%s],\"restart_update_s\":%.3f,"
                            + "\"restart_store_read_bytes\":%d,\"restart_store_bytes_needed\":%d,"
                            + "\"restart_bytes_verified\":%d,"
                            + "\"bytes_verified\":%d,\"min_store_read_ratio\":%.4f,"
                            + "\"max_store_read_ratio\":%.4f,\"publish_tcp_bytes\":%d,%s"
                            + "\"seconds\":%.1f,\"verified\":%s}",
                    engine.label(),
                    model,
                    instances,
                    tp,
                    quoted(modes()),
                    modeByInstance.entrySet().stream()
                            .map(e -> "\"" + e.getKey() + "\":\"" + e.getValue() + "\"")
                            .collect(Collectors.joining(",")),
                    generations.stream()
                            .map(g -> Long.toString(g.generation()))
                            .collect(Collectors.joining(",")),
                    generations.stream()
                            .map(g -> String.format(Locale.ROOT, "%.3f", g.publishSeconds()))
                            .collect(Collectors.joining(",")),
                    modes().stream()
                            .map(m -> "\"" + m + "\":" + updateSeconds(m))
                            .collect(Collectors.joining(",")),
                    quoted(restart.instances()),
                    restart.updateSeconds(),
                    restart.storeBytesRead(),
                    restart.storeBytesNeeded(),
                    restart.bytesVerified(),
                    bytesVerified(),
                    minStoreReadRatio(),
                    maxStoreReadRatio(),
                    publishTcpBytes(),
                    engine == DataplaneEngine.MOONCAKE
                            ? String.format(
                                    Locale.ROOT,
                                    "\"local_replica_ratio\":%.4f,",
                                    localReplicaRatio())
                            : "",
                    seconds,
                    verified());
        }

        /** {@code mode}'s update seconds, one per generation, as a JSON array. */
        private String updateSeconds(String mode) {
            return generations.stream()
                    .map(g -> String.format(Locale.ROOT, "%.3f", g.updateSecondsByMode().get(mode)))
                    .collect(Collectors.joining(",", "[", "]"));
        }

        /** The table a person reads at the end. */
        public void printTable(PrintStream out) {
            List<String> modes = modes();
            StringBuilder head =
                    new StringBuilder(String.format("%-10s %9s %9s", "", "publish", "tcp"));
            for (String m : modes) {
                head.append(String.format(" %9s", m));
            }
            head.append(String.format(" %11s %10s", "store read", "verified"));
            out.println(head);
            for (GenerationResult g : generations) {
                StringBuilder row =
                        new StringBuilder(
                                String.format(
                                        Locale.ROOT,
                                        "%-10s %8.2fs %8dB",
                                        "gen " + g.generation(),
                                        g.publishSeconds(),
                                        g.publishTcpBytes()));
                for (String m : modes) {
                    row.append(
                            String.format(Locale.ROOT, " %8.2fs", g.updateSecondsByMode().get(m)));
                }
                row.append(
                        String.format(
                                Locale.ROOT,
                                " %10.4fx %8.1fMB",
                                g.storeReadRatio(),
                                g.bytesVerified() / 1e6));
                out.println(row);
            }
            out.println(
                    String.format(
                            Locale.ROOT,
                            "%-10s %s loaded generation %d alone in %.2f s with no republish;"
                                    + " store read %.4fx, %.1f MB verified",
                            "restart",
                            String.join(" and ", restart.instances()),
                            restart.generation(),
                            restart.updateSeconds(),
                            restart.storeReadRatio(),
                            restart.bytesVerified() / 1e6));
            if (engine == DataplaneEngine.MOONCAKE) {
                out.println(
                        String.format(
                                Locale.ROOT,
                                "%-10s %d of %d objects in their own publisher's segment (%.4f),"
                                        + " as the Mooncake master reports them",
                                "locality",
                                generations.stream()
                                        .mapToLong(GenerationResult::objectsLocal)
                                        .sum(),
                                generations.stream()
                                        .mapToLong(GenerationResult::objectsLocated)
                                        .sum(),
                                localReplicaRatio()));
            }
            out.println(
                    String.format(
                            Locale.ROOT,
                            "%s in %.1f s on %s: instances %s",
                            verified() ? "every check held" : "A CHECK FAILED",
                            seconds,
                            engine.label(),
                            modeByInstance));
        }
    }

    private Demo() {}

    /**
     * {@code ./relay demo}'s flags, as its {@code --help} describes them, with {@code --hosts} or
     * without: {@code modes} holds one mode, or both (then even instances compat, odd ones direct;
     * with {@code --hosts} one lab per mode).
     */
    public record Options(
            String model,
            int instances,
            int tp,
            List<Mode> modes,
            DataplaneEngine engine,
            boolean json,
            String prefix) {

        public Options {
            modes = List.copyOf(modes);
        }

        /** The lab of one mode, as {@code --hosts} runs one per mode. */
        LabCluster.Spec spec(Mode mode) {
            return LabCluster.Spec.of(model, instances, tp, mode);
        }
    }

    /** {@code ./relay demo}: tells the story; exit 1 when a check failed. */
    public static void run(Options options) throws Exception {
        if (System.getProperty(ServiceProcess.JVM_OPTIONS_PROPERTY) == null) {
            // The demo tells a story, it does not measure: its seven services start with C1 only,
            // about half the CPU of a full-JIT start, which on a small machine is most of the
            // demo's time. The benchmarks (./relay bench) run the services with full JIT.
            System.setProperty(ServiceProcess.JVM_OPTIONS_PROPERTY, "-XX:TieredStopAtLevel=1");
        }
        LabCluster.Spec spec =
                options.modes().size() > 1
                        ? LabCluster.Spec.bothModes(
                                options.model(), options.instances(), options.tp())
                        : options.spec(options.modes().get(0));
        Report report;
        try {
            report = run(spec, options.engine());
        } catch (MooncakeServices.StartException e) {
            System.err.println("relay demo: " + e.getMessage());
            System.exit(3);
            return;
        }
        if (options.json()) {
            report.generations().forEach(g -> System.out.println(g.json()));
            report.printTable(System.err);
            System.out.println(report.json());
        } else {
            report.printTable(System.out);
        }
        if (!report.verified()) {
            System.exit(1);
        }
    }

    /**
     * The demo's story on a fresh lab of {@code spec} on {@code engine}, stopped at the end (or on
     * Ctrl-C): on Mooncake with a master of its own, removed with the lab.
     */
    public static Report run(LabCluster.Spec spec, DataplaneEngine engine) throws Exception {
        long started = System.nanoTime();
        MooncakeServices mooncake = null;
        if (engine == DataplaneEngine.MOONCAKE) {
            say(
                    "starting mooncake_master (pinned wheel in %s) in a network namespace",
                    MooncakeLab.VENV);
            mooncake = MooncakeServices.start();
        }
        say(
                "starting control-api, %d publishers and %d loaders (%s, %d instances x tp %d, %s,"
                        + " %s engine)",
                spec.trainerNodes(),
                spec.instances(),
                spec.model(),
                spec.instances(),
                spec.tp(),
                spec.mode() == null ? "both modes" : spec.modeName() + " mode",
                engine.label());
        LabCluster lab;
        Dataplane reader = null;
        try {
            lab = LabCluster.start(spec);
            if (mooncake != null) {
                try {
                    reader =
                            Dataplane.open(
                                    mooncake.lab()
                                            .readerConfig(
                                                    "demo-locate",
                                                    spec.redisUri(),
                                                    lab.dataplanePrefix()));
                } catch (RuntimeException | Error e) {
                    lab.close();
                    throw e;
                }
            }
        } catch (Exception | Error e) {
            // an Error too (a class that failed to load): the master and its namespace go
            if (mooncake != null) {
                mooncake.close();
            }
            throw e;
        }
        MooncakeServices master = mooncake;
        Dataplane locator = reader;
        AtomicBoolean closed = new AtomicBoolean();
        Runnable stop =
                () -> {
                    if (closed.compareAndSet(false, true)) {
                        try {
                            lab.close();
                        } finally {
                            if (locator != null) {
                                locator.close();
                            }
                            if (master != null) {
                                master.close();
                            }
                        }
                    }
                };
        Thread onInterrupt = new Thread(stop, "demo-stop");
        Runtime.getRuntime().addShutdownHook(onInterrupt);
        try {
            return lab.showingLogsOnFailure(() -> story(lab, engine, locator, started));
        } finally {
            stop.run();
            try {
                Runtime.getRuntime().removeShutdownHook(onInterrupt);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or ran: the lab is stopped either way
            }
        }
    }

    private static Report story(
            LabCluster lab, DataplaneEngine engine, Dataplane locator, long started)
            throws Exception {
        LabCluster.Spec spec = lab.spec();
        Map<String, String> modeByInstance = new LinkedHashMap<>();
        List<String> ids = lab.placement().instances();
        for (int i = 0; i < ids.size(); i++) {
            modeByInstance.put(ids.get(i), spec.modeOf(i).name().toLowerCase(Locale.ROOT));
        }
        say("  services up; logs in %s; instances %s", lab.logs(), modeByInstance);
        List<PublisherClient> publishers = new ArrayList<>();
        for (int i = 0; i < spec.trainerNodes(); i++) {
            publishers.add(
                    PublisherClient.connect(
                            lab.publisherUrl(i), lab.trainerToken(), Duration.ofMinutes(1)));
        }
        Demands demands = Demands.of(lab.manifest(), lab.placement());
        LocalReplicas locality = locator == null ? null : new LocalReplicas(locator, publishers);
        List<GenerationResult> generations = new ArrayList<>();
        for (int step = 0; step < GENERATIONS; step++) {
            long tcpBefore = tcpBytes(publishers);
            long t0 = System.nanoTime();
            long g = lab.publish(step);
            double publishSeconds = (System.nanoTime() - t0) / 1e9;
            long publishTcp = tcpBytes(publishers) - tcpBefore;
            // Asked before the update and the collection, while the generation is whole and new.
            LocalReplicas.Count where =
                    locality == null
                            ? new LocalReplicas.Count(0, 0)
                            : locality.of(lab.manifest(), g, lab.nodeOfTensor(g));
            LabCluster.Updates update = lab.updateAll().requireUpdated();
            long verified = lab.verifyAll(g);
            lab.collectGarbage();
            GenerationResult r =
                    new GenerationResult(
                            g,
                            publishSeconds,
                            publishTcp,
                            update.seconds(),
                            secondsByMode(update.results(), modeByInstance),
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
                    publishSeconds,
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
            if (locality != null) {
                say(
                        "  generation %d: the Mooncake master reports %d of %d objects in their own"
                                + " publisher's segment",
                        g, where.local(), where.objects());
            }
        }
        long active = generations.get(generations.size() - 1).generation();

        // One loader per mode killed and brought back: each loads the active generation alone.
        List<Integer> restart = new ArrayList<>();
        for (String mode : List.copyOf(new java.util.TreeSet<>(modeByInstance.values()))) {
            restart.add(List.copyOf(modeByInstance.values()).indexOf(mode));
        }
        List<RolloutEngine> restarted = lab.restartInstances(restart);
        LabCluster.Updates rebuilt = lab.update(restarted).requireUpdated();
        long verified = lab.verify(restarted, active);
        List<String> restartedIds = restarted.stream().map(RolloutEngine::instance).toList();
        // Each restarted engine rebuilds in a group of its own, so each reads what it needs.
        long needed = 0;
        for (String id : restartedIds) {
            List<Worker> its =
                    lab.placement().workers().stream()
                            .filter(w -> w.instance().equals(id))
                            .toList();
            needed += Demands.of(lab.manifest(), new TargetPlacement(its)).storeBytes();
        }
        RestartResult r =
                new RestartResult(
                        restartedIds,
                        active,
                        rebuilt.seconds(),
                        rebuilt.storeBytesRead(),
                        needed,
                        verified);
        say(
                "  killed the loaders of %s; the new ones loaded active generation %d alone in"
                        + " %.2f s, no republish; %d bytes checked",
                String.join(" and ", restartedIds), active, rebuilt.seconds(), verified);
        return new Report(
                engine,
                spec.model(),
                spec.instances(),
                spec.tp(),
                modeByInstance,
                generations,
                r,
                (System.nanoTime() - started) / 1e9);
    }

    /**
     * Per mode, the longest prepare + apply + post-apply of its instances (the session's consensus
     * makes them end together; the loader's own phases say which mode took longer).
     */
    private static Map<String, Double> secondsByMode(
            List<UpdateProgress> results, Map<String, String> modeByInstance) {
        Map<String, Double> out = new java.util.TreeMap<>();
        for (UpdateProgress p : results) {
            String mode = modeByInstance.get(instanceOf(p));
            PhaseDurations d = p.getDurations();
            double s =
                    d == null
                            ? 0
                            : (nonNull(d.getPrepareMs())
                                            + nonNull(d.getApplyMs())
                                            + nonNull(d.getPostApplyMs()))
                                    / 1e3;
            out.merge(mode, s, Math::max);
        }
        return out;
    }

    /** An update id is {@code <instance>:g<generation>:<nonce>}. */
    private static String instanceOf(UpdateProgress p) {
        String id = p.getUpdateId();
        int colon = id.indexOf(':');
        return colon < 0 ? id : id.substring(0, colon);
    }

    private static long nonNull(Long v) {
        return v == null ? 0 : v;
    }

    private static long tcpBytes(List<PublisherClient> publishers) {
        long total = 0;
        for (PublisherClient p : publishers) {
            TransportCounters c = p.segment().getTransport();
            total += c.getTcpRead() + c.getTcpWritten();
        }
        return total;
    }

    /** {@code read / needed}, 0 where nothing was needed. */
    static double ratio(long read, long needed) {
        return needed == 0 ? 0 : (double) read / needed;
    }

    private static String quoted(List<String> names) {
        return names.stream().map(n -> "\"" + n + "\"").collect(Collectors.joining(","));
    }

    private static String secondsJson(Map<String, Double> byMode) {
        return byMode.entrySet().stream()
                .map(e -> String.format(Locale.ROOT, "\"%s\":%.3f", e.getKey(), e.getValue()))
                .collect(Collectors.joining(",", "{", "}"));
    }

    private static final long START = System.nanoTime();

    /** A line of narration on stderr, after the seconds since the demo started. */
    private static void say(String format, Object... args) {
        System.err.println(
                String.format(Locale.ROOT, "[%5.1f s] ", (System.nanoTime() - START) / 1e9)
                        + String.format(Locale.ROOT, format, args));
    }
}
