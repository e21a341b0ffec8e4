package io.weightrelay.lab.demo;

import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabSecrets;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.HostLabException;
import io.weightrelay.lab.hosts.LinkCounters;
import io.weightrelay.lab.hosts.ShmIsolation;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Demands;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code ./relay demo --hosts [--model M] [--instances I] [--tp P] [--mode compat|direct|both]
 * [--engine builtin|mooncake] [--json]}: the demo on several hosts of this machine ({@link
 * MultiHostCluster}): Redis, control-api, each publisher with its trainer rank, and the loaders of
 * each rollout node with their engines, each group in a host of its own (a network namespace and a
 * private {@code /dev/shm}), so every byte between services crosses a real interface. Per mode:
 * publish, update every instance, check every byte; publish the next generation and update again;
 * kill one loader and bring it back on the active generation without republish; then compare the
 * bytes the engines moved over tcp with what crossed the data-plane interfaces and check from
 * {@code /proc} that no process maps another host's shared memory. With {@code --engine mooncake}
 * every service runs on the real Mooncake over its tcp transport between the hosts, against a
 * {@code mooncake_master} of the pinned wheel on the Redis host. Needs root. Narration on stderr;
 * with {@code --json} one JSON line per mode and a summary line last on stdout. Exit 0 when every
 * check held, 1 when one failed, 2 for bad flags, 3 when the hosts cannot be made (not root, say).
 */
public final class HostsDemo {

    /**
     * What one mode showed.
     *
     * @param engine the services' data plane ({@code builtin}, {@code mooncake})
     * @param storeBytesRead store bytes the full updates read (the restart excluded)
     * @param storeBytesNeeded what those updates needed: each stored byte a worker holds, once
     * @param engineTcpBytes bytes the engines moved over tcp, as the loaders counted them
     * @param dataplane what crossed the data-plane interfaces during the updates
     * @param overheadBytes TCP payload on the data-plane interfaces beyond the engines' own count:
     *     the engine's request headers, replies, handshakes and notifies
     * @param publishDataplane what crossed the data-plane interfaces while generations published
     * @param secretsInLogs the logs found holding one of the run's tokens or secrets (none may)
     */
    public record ModeResult(
            String engine,
            String mode,
            String model,
            int hosts,
            int instances,
            int tp,
            long[] generations,
            double updateSeconds,
            double restartSeconds,
            long bytesVerified,
            long restartBytesVerified,
            long bytesReceived,
            long targetStoredBytes,
            long storeBytesRead,
            long storeBytesNeeded,
            long engineTcpBytes,
            LinkCounters.Traffic dataplane,
            long overheadBytes,
            LinkCounters.Traffic control,
            LinkCounters.Traffic publishDataplane,
            ShmIsolation.Report isolation,
            List<String> secretsInLogs) {

        public double storeReadRatio() {
            return Demo.ratio(storeBytesRead, storeBytesNeeded);
        }

        /** Every check the demo makes, as the test makes them. */
        public boolean verified() {
            return bytesVerified > 0
                    && restartBytesVerified > 0
                    && bytesReceived == targetStoredBytes
                    && storeBytesRead == storeBytesNeeded
                    && engineTcpBytes > 0
                    && overheadBytes >= 0
                    && isolation.clean()
                    && secretsInLogs.isEmpty();
        }

        String json() {
            return String.format(
                    Locale.ROOT,
                    "{\"engine\":\"%s\",\"mode\":\"%s\",\"model\":\"%s\",\"hosts\":%d,\"instances\":%d,\"tp\":%d,"
                            + "\"generations\":[%d,%d],\"update_s\":%.3f,\"restart_update_s\":%.3f,"
                            + "\"bytes_verified\":%d,\"restart_bytes_verified\":%d,"
                            + "\"bytes_received\":%d,\"store_read_bytes\":%d,"
                            + "\"store_bytes_needed\":%d,\"store_read_ratio\":%.4f,"
                            + "\"cross_host_tcp_bytes\":%d,\"dataplane_interface_bytes\":%d,"
                            + "\"dataplane_interface_frames\":%d,\"dataplane_tcp_payload_bytes\":%d,"
                            + "\"engine_protocol_overhead_bytes\":%d,\"control_interface_bytes\":%d,"
                            + "\"publish_dataplane_payload_bytes\":%d,\"processes_checked\":%d,"
                            + "\"shm_mappings_checked\":%d,\"shm_violations\":%d,"
                            + "\"secrets_in_logs\":%d,\"verified\":%s}",
                    engine,
                    mode,
                    model,
                    hosts,
                    instances,
                    tp,
                    generations[0],
                    generations[1],
                    updateSeconds,
                    restartSeconds,
                    bytesVerified,
                    restartBytesVerified,
                    bytesReceived,
                    storeBytesRead,
                    storeBytesNeeded,
                    storeReadRatio(),
                    engineTcpBytes,
                    dataplane.bytes(),
                    dataplane.packets(),
                    dataplane.tcpPayload(),
                    overheadBytes,
                    control.bytes(),
                    publishDataplane.tcpPayload(),
                    isolation.processes(),
                    isolation.shmMappings(),
                    isolation.violations().size(),
                    secretsInLogs.size(),
                    verified());
        }
    }

    private HostsDemo() {}

    /** {@code ./relay demo --hosts}: one lab per mode; exit 1 when a check failed. */
    public static void run(Demo.Options options) throws Exception {
        DataplaneEngine engine = options.engine();
        List<Mode> run = options.modes();
        try {
            HostLab.requireRoot();
        } catch (HostLabException e) {
            System.err.println("relay demo --hosts: " + e.getMessage());
            System.exit(3);
        }
        List<ModeResult> results = new ArrayList<>();
        for (Mode mode : run) {
            ModeResult r = runMode(options.spec(mode), options.prefix(), engine);
            results.add(r);
            if (options.json()) {
                System.out.println(r.json());
            }
        }
        boolean verified = results.stream().allMatch(ModeResult::verified);
        long read = results.stream().mapToLong(ModeResult::storeBytesRead).sum();
        long needed = results.stream().mapToLong(ModeResult::storeBytesNeeded).sum();
        long tcp = results.stream().mapToLong(ModeResult::engineTcpBytes).sum();
        long payload = results.stream().mapToLong(r -> r.dataplane().tcpPayload()).sum();
        long iface = results.stream().mapToLong(r -> r.dataplane().bytes()).sum();
        long verifiedBytes =
                results.stream().mapToLong(r -> r.bytesVerified() + r.restartBytesVerified()).sum();
        String summary =
                String.format(
                        Locale.ROOT,
                        "{\"engine\":\"%s\",\"hosts\":%d,\"modes\":[%s],\"model\":\"%s\",\"instances\":%d,\"tp\":%d,"
                                + "\"verified\":%s,\"bytes_verified\":%d,\"store_read_ratio\":%.4f,"
                                + "\"cross_host_tcp_bytes\":%d,\"dataplane_interface_bytes\":%d,"
                                + "\"dataplane_tcp_payload_bytes\":%d,"
                                + "\"shm_violations\":%d}",
                        engine.label(),
                        results.get(0).hosts(),
                        String.join(
                                ",", results.stream().map(r -> "\"" + r.mode() + "\"").toList()),
                        options.model(),
                        options.instances(),
                        options.tp(),
                        verified,
                        verifiedBytes,
                        Demo.ratio(read, needed),
                        tcp,
                        iface,
                        payload,
                        results.stream().mapToInt(r -> r.isolation().violations().size()).sum());
        if (options.json()) {
            System.out.println(summary);
        } else {
            System.out.printf(
                    Locale.ROOT,
                    "%d hosts, modes %s: %s; %.1f MB verified, store read ratio %.4f,"
                            + " %.1f MB over tcp between hosts (%.1f MB of TCP payload on the"
                            + " data-plane interfaces)%n",
                    results.get(0).hosts(),
                    results.stream().map(ModeResult::mode).toList(),
                    verified ? "every check held" : "A CHECK FAILED",
                    verifiedBytes / 1e6,
                    Demo.ratio(read, needed),
                    tcp / 1e6,
                    payload / 1e6);
        }
        if (!verified) {
            System.exit(1);
        }
    }

    /**
     * One mode on fresh hosts named from {@code prefix}, every service on {@code engine}: the
     * demo's story and every measurement it reports.
     */
    public static ModeResult runMode(LabCluster.Spec spec, String prefix, DataplaneEngine engine)
            throws Exception {
        String engineName = engine.label();
        String mode = spec.mode().name().toLowerCase(Locale.ROOT);
        say(
                "%s mode: making hosts and starting Redis, control-api, %d publishers and %d loaders"
                        + " (%s, %d instances x tp %d) on the %s engine",
                mode,
                spec.trainerNodes(),
                spec.instances(),
                spec.model(),
                spec.instances(),
                spec.tp(),
                engineName);
        try (MultiHostCluster lab = MultiHostCluster.start(spec, prefix, List.of(), engine)) {
            return lab.showingLogsOnFailure(
                    () -> {
                        int hosts = lab.hosts().hosts().size();
                        say("  %d hosts up (%s); logs in %s", hosts, names(lab), lab.logs());
                        MultiHostCluster.Published g1 = lab.publish(0);
                        MultiHostCluster.Update first = lab.updateAll().requireVerified();
                        say(
                                "  generation %d published by the trainer ranks on their hosts; every"
                                        + " instance updated in %.2f s, %d bytes checked",
                                g1.generation(), first.seconds(), first.bytesVerified());
                        MultiHostCluster.Published g2 = lab.publish(1);
                        MultiHostCluster.Update second = lab.updateAll().requireVerified();
                        lab.collectGarbage();
                        say(
                                "  generation %d applied in %.2f s: store read %.1f MB, %.1f MB over tcp"
                                        + " between hosts",
                                g2.generation(),
                                second.seconds(),
                                second.storeBytesRead() / 1e6,
                                second.engineTcpBytes() / 1e6);
                        String restarted = lab.restartInstance(0);
                        MultiHostCluster.Update rebuilt = lab.update(restarted).requireVerified();
                        say(
                                "  killed %s's loader; the new one loaded generation %d alone in %.2f s,"
                                        + " no republish; %d bytes checked",
                                restarted,
                                g2.generation(),
                                rebuilt.seconds(),
                                rebuilt.bytesVerified());
                        ShmIsolation.Report isolation = lab.isolation();
                        Demands demands = Demands.of(lab.manifest(), lab.placement());
                        LinkCounters.Traffic dp =
                                first.traffic()
                                        .dataSent()
                                        .plus(second.traffic().dataSent())
                                        .plus(rebuilt.traffic().dataSent());
                        LinkCounters.Traffic control =
                                first.traffic()
                                        .controlSent()
                                        .plus(second.traffic().controlSent())
                                        .plus(rebuilt.traffic().controlSent());
                        long tcp =
                                first.engineTcpBytes()
                                        + second.engineTcpBytes()
                                        + rebuilt.engineTcpBytes();
                        ModeResult r =
                                new ModeResult(
                                        engineName,
                                        mode,
                                        spec.model(),
                                        hosts,
                                        spec.instances(),
                                        spec.tp(),
                                        new long[] {g1.generation(), g2.generation()},
                                        second.seconds(),
                                        rebuilt.seconds(),
                                        first.bytesVerified() + second.bytesVerified(),
                                        rebuilt.bytesVerified(),
                                        second.bytesReceived(),
                                        demands.targetStoredBytes(),
                                        first.storeBytesRead() + second.storeBytesRead(),
                                        2 * demands.storeBytes(),
                                        tcp,
                                        dp,
                                        dp.tcpPayload() - tcp,
                                        control,
                                        g1.traffic().dataSent().plus(g2.traffic().dataSent()),
                                        isolation,
                                        LabSecrets.foundIn(lab.logs(), lab.configuredSecrets()));
                        say(
                                "  engines counted %d tcp bytes; the data-plane interfaces carried %d bytes"
                                        + " in %d frames, %d of them TCP payload; %d processes checked,"
                                        + " %d shared-memory mappings, all on their own host: %s",
                                tcp,
                                dp.bytes(),
                                dp.packets(),
                                dp.tcpPayload(),
                                isolation.processes(),
                                isolation.shmMappings(),
                                isolation.clean() ? "yes" : isolation.violations());
                        return r;
                    });
        }
    }

    private static String names(MultiHostCluster lab) {
        List<String> out = new ArrayList<>();
        lab.hosts().hosts().forEach(h -> out.add(h.name() + " " + h.controlAddress()));
        return String.join(", ", out);
    }

    private static void say(String format, Object... args) {
        System.err.println(String.format(Locale.ROOT, format, args));
    }
}
