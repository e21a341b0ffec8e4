package io.weightrelay.lab.demo;

import io.weightrelay.api.publisher.client.model.TransportCounters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.lab.cluster.MooncakeServices;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.HostLabException;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.trainer.client.PublisherClient;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
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
 * every service the demo started. The story itself ({@link DemoStory}) runs on any {@link
 * io.weightrelay.lab.cluster.Cluster}.
 *
 * <p>With {@code --hosts} it runs on several hosts of this machine instead ({@link
 * MultiHostCluster}), one lab per mode: Redis, control-api, each publisher with its trainer rank,
 * and the loaders of each rollout node with their engines, each group in a host of its own (a
 * network namespace and a private {@code /dev/shm}), so every byte between services crosses a real
 * interface. After the story it compares the bytes the engines moved over tcp with what crossed the
 * data-plane interfaces, checks from {@code /proc} that no process maps another host's shared
 * memory, and every log for a secret ({@link ModeResult}); with {@code --json} one JSON line per
 * mode and a summary line last on stdout. With {@code --engine mooncake} the services talk the real
 * Mooncake's tcp transport between the hosts, against a {@code mooncake_master} on the Redis host.
 * Needs root: exit 3 when the hosts cannot be made.
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
            return generations.size() == DemoStory.GENERATIONS
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
     * {@code ./relay demo}'s flags, as its {@code --help} describes them: {@code modes} holds one
     * mode, or both (then even instances compat, odd ones direct; with {@code hosts} one lab per
     * mode, a lab on hosts serving one).
     */
    public record Options(
            String model,
            int instances,
            int tp,
            List<Mode> modes,
            DataplaneEngine engine,
            boolean json,
            boolean hosts,
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
        if (options.hosts()) {
            onHosts(options);
            return;
        }
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

    /** {@code ./relay demo --hosts}: one lab on hosts per mode; exit 1 when a check failed. */
    private static void onHosts(Options options) throws Exception {
        try {
            HostLab.requireRoot();
        } catch (HostLabException e) {
            System.err.println("relay demo --hosts: " + e.getMessage());
            System.exit(3);
        }
        List<ModeResult> results = new ArrayList<>();
        for (Mode mode : options.modes()) {
            ModeResult r = runMode(options.spec(mode), options.prefix(), options.engine());
            results.add(r);
            if (options.json()) {
                System.out.println(r.json());
            }
        }
        ModeResult.printSummary(results, options, System.out);
        if (!results.stream().allMatch(ModeResult::verified)) {
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
            DemoStory.say(
                    "starting mooncake_master (pinned wheel in %s) in a network namespace",
                    MooncakeLab.VENV);
            mooncake = MooncakeServices.start();
        }
        DemoStory.say(
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
            return lab.showingLogsOnFailure(
                    () -> {
                        DemoStory.Told told = DemoStory.tell(lab, countersOf(lab, locator));
                        return new Report(
                                engine,
                                spec.model(),
                                spec.instances(),
                                spec.tp(),
                                told.modeByInstance(),
                                told.generations(),
                                told.restart(),
                                (System.nanoTime() - started) / 1e9);
                    });
        } finally {
            stop.run();
            try {
                Runtime.getRuntime().removeShutdownHook(onInterrupt);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or ran: the lab is stopped either way
            }
        }
    }

    /**
     * One mode of {@code ./relay demo --hosts} on fresh hosts named from {@code prefix}, every
     * service on {@code engine}: the demo's story and every measurement it reports. The hosts
     * remove themselves at the end, and on Ctrl-C ({@link HostLab}).
     */
    public static ModeResult runMode(LabCluster.Spec spec, String prefix, DataplaneEngine engine)
            throws Exception {
        DemoStory.say(
                "%s mode: making hosts and starting Redis, control-api, %d publishers and %d loaders"
                        + " (%s, %d instances x tp %d) on the %s engine",
                spec.modeName(),
                spec.trainerNodes(),
                spec.instances(),
                spec.model(),
                spec.instances(),
                spec.tp(),
                engine.label());
        try (MultiHostCluster lab = MultiHostCluster.start(spec, prefix, List.of(), engine)) {
            HostLab hosts = lab.hostLab();
            return lab.showingLogsOnFailure(
                    () -> {
                        DemoStory.say(
                                "  %d hosts up (%s)",
                                hosts.hosts().size(),
                                hosts.hosts().stream()
                                        .map(h -> h.name() + " " + h.controlAddress())
                                        .collect(Collectors.joining(", ")));
                        DemoStory.Told told = DemoStory.tell(lab, DemoStory.LocalCounters.NONE);
                        ModeResult r = ModeResult.of(lab, hosts, engine.label(), told);
                        DemoStory.say(
                                "  engines counted %d tcp bytes; the data-plane interfaces carried"
                                        + " %d bytes in %d frames, %d of them TCP payload; %d"
                                        + " processes checked, %d shared-memory mappings, all on"
                                        + " their own host: %s",
                                r.engineTcpBytes(),
                                r.dataplane().bytes(),
                                r.dataplane().packets(),
                                r.dataplane().tcpPayload(),
                                r.isolation().processes(),
                                r.isolation().shmMappings(),
                                r.isolation().clean() ? "yes" : r.isolation().violations());
                        return r;
                    });
        }
    }

    /**
     * What the demo counts from here on a lab of this machine: its publishers' tcp counters, and on
     * Mooncake ({@code locator} not null) where the master reports each object's replica.
     */
    private static DemoStory.LocalCounters countersOf(LabCluster lab, Dataplane locator) {
        List<PublisherClient> publishers = new ArrayList<>();
        for (int i = 0; i < lab.spec().trainerNodes(); i++) {
            publishers.add(
                    PublisherClient.connect(
                            lab.publisherUrl(i), lab.trainerToken(), Duration.ofMinutes(1)));
        }
        LocalReplicas locality = locator == null ? null : new LocalReplicas(locator, publishers);
        return new DemoStory.LocalCounters(
                () -> tcpBytes(publishers),
                locality == null
                        ? DemoStory.LocalCounters.NONE.replicas()
                        : g -> locality.of(lab.manifest(), g, lab.nodeOfTensor(g)));
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
}
