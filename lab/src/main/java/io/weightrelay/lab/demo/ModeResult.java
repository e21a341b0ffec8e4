package io.weightrelay.lab.demo;

import io.weightrelay.lab.cluster.Cluster;
import io.weightrelay.lab.cluster.LabSecrets;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.LinkCounters;
import io.weightrelay.lab.hosts.ShmIsolation;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * What the demo's story showed on hosts, one lab per mode ({@code ./relay demo --hosts}): beside
 * every byte checked, the checks only hosts allow: what crossed the data-plane interfaces against
 * what the engines counted, and from {@code /proc} that no process maps another host's shared
 * memory; and that no log holds a secret.
 *
 * @param engine the services' data plane ({@code builtin}, {@code mooncake})
 * @param storeBytesRead store bytes the full updates read (the restart excluded)
 * @param storeBytesNeeded what those updates needed: each stored byte a worker holds, once
 * @param engineTcpBytes bytes the engines moved over tcp, as the loaders counted them
 * @param dataplane what crossed the data-plane interfaces during the updates
 * @param overheadBytes TCP payload on the data-plane interfaces beyond the engines' own count: the
 *     engine's request headers, replies, handshakes and notifies
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

    /**
     * What the story {@code told} on {@code lab}'s hosts, with the checks made now that it ended:
     * the hosts' processes and shared memory from {@code /proc}, and every log for a secret.
     */
    static ModeResult of(Cluster lab, HostLab hosts, String engine, DemoStory.Told told) {
        List<Demo.GenerationResult> gens = told.generations();
        Demo.GenerationResult last = gens.get(gens.size() - 1);
        LinkCounters.Traffic dp = sum(told.updates(), false);
        long tcp = told.updates().stream().mapToLong(LabUpdate::engineTcpBytes).sum();
        LinkCounters.Traffic publish = new LinkCounters.Traffic(0, 0);
        for (Cluster.Published p : told.publishes()) {
            publish = publish.plus(p.traffic().orElseThrow().dataSent());
        }
        ShmIsolation.Report isolation = ShmIsolation.check(hosts);
        return new ModeResult(
                engine,
                lab.spec().modeName(),
                lab.spec().model(),
                hosts.hosts().size(),
                lab.spec().instances(),
                lab.spec().tp(),
                gens.stream().mapToLong(Demo.GenerationResult::generation).toArray(),
                last.updateSeconds(),
                told.restart().updateSeconds(),
                gens.stream().mapToLong(Demo.GenerationResult::bytesVerified).sum(),
                told.restart().bytesVerified(),
                last.bytesReceived(),
                told.demands().targetStoredBytes(),
                gens.stream().mapToLong(Demo.GenerationResult::storeBytesRead).sum(),
                gens.stream().mapToLong(Demo.GenerationResult::storeBytesNeeded).sum(),
                tcp,
                dp,
                dp.tcpPayload() - tcp,
                sum(told.updates(), true),
                publish,
                isolation,
                LabSecrets.foundIn(lab.logs(), lab.configuredSecrets()));
    }

    /** What every host sent into one network during {@code updates}. */
    private static LinkCounters.Traffic sum(List<LabUpdate> updates, boolean control) {
        LinkCounters.Traffic t = new LinkCounters.Traffic(0, 0);
        for (LabUpdate u : updates) {
            LinkCounters c = u.traffic().orElseThrow();
            t = t.plus(control ? c.controlSent() : c.dataSent());
        }
        return t;
    }

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
                        + "\"generations\":[%s],\"update_s\":%.3f,\"restart_update_s\":%.3f,"
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
                Arrays.stream(generations)
                        .mapToObj(Long::toString)
                        .collect(Collectors.joining(",")),
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

    /**
     * The last line of {@code ./relay demo --hosts}: over every mode's lab, JSON with {@code json},
     * else a sentence.
     */
    static void printSummary(List<ModeResult> results, Demo.Options options, PrintStream out) {
        boolean verified = results.stream().allMatch(ModeResult::verified);
        long read = results.stream().mapToLong(ModeResult::storeBytesRead).sum();
        long needed = results.stream().mapToLong(ModeResult::storeBytesNeeded).sum();
        long tcp = results.stream().mapToLong(ModeResult::engineTcpBytes).sum();
        long payload = results.stream().mapToLong(r -> r.dataplane().tcpPayload()).sum();
        long iface = results.stream().mapToLong(r -> r.dataplane().bytes()).sum();
        long verifiedBytes =
                results.stream().mapToLong(r -> r.bytesVerified() + r.restartBytesVerified()).sum();
        if (options.json()) {
            out.println(
                    String.format(
                            Locale.ROOT,
                            "{\"engine\":\"%s\",\"hosts\":%d,\"modes\":[%s],\"model\":\"%s\",\"instances\":%d,\"tp\":%d,"
                                    + "\"verified\":%s,\"bytes_verified\":%d,\"store_read_ratio\":%.4f,"
                                    + "\"cross_host_tcp_bytes\":%d,\"dataplane_interface_bytes\":%d,"
                                    + "\"dataplane_tcp_payload_bytes\":%d,"
                                    + "\"shm_violations\":%d}",
                            options.engine().label(),
                            results.get(0).hosts(),
                            String.join(
                                    ",",
                                    results.stream().map(r -> "\"" + r.mode() + "\"").toList()),
                            options.model(),
                            options.instances(),
                            options.tp(),
                            verified,
                            verifiedBytes,
                            Demo.ratio(read, needed),
                            tcp,
                            iface,
                            payload,
                            results.stream()
                                    .mapToInt(r -> r.isolation().violations().size())
                                    .sum()));
        } else {
            out.printf(
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
    }
}
