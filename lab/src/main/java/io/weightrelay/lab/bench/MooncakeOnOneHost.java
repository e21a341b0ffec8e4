package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.dataplane.bench.Baselines;
import io.weightrelay.lab.bench.DataplaneRounds.Round;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.lab.cluster.MooncakeServices;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * {@code ./relay bench dataplane --engine mooncake}: the real Mooncake Transfer Engine on its tcp
 * transport against a plain loopback socket, in the same rounds, from and into the same memory. Two
 * Mooncake data planes of this JVM, each driving its agent of the pinned wheel in the namespace of
 * a {@link MooncakeLab} (whose master the Store needs; every Mooncake listener on that namespace's
 * loopback), each with a receive segment of {@code size} bytes: shared memory this JVM and its
 * agent both map. One JSON line:
 *
 * <ul>
 *   <li>{@code tcp_gbps}: one Transfer Engine write of {@code size} bytes from the source segment
 *       into the target's, as the data plane's API issues it: one agent command, one {@code
 *       batch_transfer_sync_write} of one range, which Mooncake's tcp transport moves over one
 *       connection; {@code socket_gbps}: the native plain-socket copy with that parallelism ({@code
 *       streams}: 1) between the same two segments; {@code tcp_vs_socket} = tcp / socket
 *   <li>{@code memcpy_gbps}: one thread's native {@code memcpy} between the same two segments, the
 *       yardstick every variant prints; {@code tcp_vs_memcpy} = tcp / memcpy
 *   <li>{@code tcp_read_gbps}, {@code tcp_read_vs_socket}: the same bytes read back (the target's
 *       engine reading the source segment), against the same socket figure
 *   <li>{@code write_exact}: the target's bytes equal the source's after one write into a zeroed
 *       target (the line's check)
 *   <li>{@code small_write_us}: the median of {@value #SMALL_WRITES} writes of 4 KiB, one agent
 *       command each: what a transfer costs before its bytes (the command's round trip over the
 *       agent's unix socket, Python, the Transfer Engine's submit and completion)
 *   <li>{@code put_gbps}: the Store's {@code put_from} of a {@code size}-byte object from the
 *       source segment into its own agent's mounted segment (removed after each round)
 *   <li>{@code tcp_get_ranges_gbps}: the other agent's {@code get_into_ranges} of that object in 1
 *       MiB ranges (a loader's tensor-sized reads, {@code get_ranges} of them, one agent command)
 *       into its target segment; {@code tcp_get_ranges_vs_socket} against the socket figure
 * </ul>
 *
 * Needs root (the namespace). The Redis at {@code --redis} holds the segments' directory under a
 * fresh key prefix, removed with the segments.
 */
final class MooncakeOnOneHost {

    /** Connections Mooncake's tcp transport moves one request over, and the socket's streams. */
    static final int STREAMS = 1;

    static final int SMALL_WRITES = 200;

    static final int SMALL = 4096;

    private static final long RANGE = 1 << 20;

    private MooncakeOnOneHost() {}

    /** Runs the benchmark on a Mooncake lab of its own; its check is {@code write_exact}. */
    static DataplaneBench.Line line(DataplaneOptions o) throws Exception {
        long size = o.size();
        int repeats = o.repeats();
        String prefix = "wr:bench:mc:" + UUID.randomUUID().toString().substring(0, 8) + ":";
        MooncakeLab started;
        try {
            started = MooncakeLab.start(ServiceProcess.home().resolve("python").resolve("src"));
        } catch (IOException e) {
            throw new MooncakeServices.StartException(e);
        }
        try (MooncakeLab mooncake = started;
                // the source's agent mounts room for the Store's object; the target's none
                Dataplane a =
                        Dataplane.open(
                                mooncake.dataplaneConfig(
                                        "bench-mc-a", o.redis(), prefix, size + (64L << 20)));
                Dataplane c =
                        Dataplane.open(
                                mooncake.dataplaneConfig("bench-mc-c", o.redis(), prefix, 0));
                Segment source = a.createReceiveSegment("bench-mc-source", size);
                Segment target = c.createReceiveSegment("bench-mc-target", size)) {
            SegmentBytes.fill(source);
            Round write =
                    EngineRounds.transfer(
                            a, TransferRequest.write(source, 0, target.name(), 0, size));
            SegmentBytes.zero(target);
            write.seconds();
            boolean exact = SegmentBytes.same(source, target);

            DataplaneRounds.Rates moved =
                    DataplaneRounds.interleaved(
                            repeats,
                            size,
                            Round.ofRate(size, () -> Baselines.memcpy(target, source, size, 1)),
                            Round.ofRate(
                                    size, () -> Baselines.socket(target, source, size, STREAMS, 1)),
                            write);
            double memcpy = moved.gbps(0);
            double socket = moved.gbps(1);
            double tcp = moved.gbps(2);
            double tcpRead =
                    DataplaneRounds.gbps(
                            repeats,
                            size,
                            EngineRounds.transfer(
                                    c, TransferRequest.read(target, 0, source.name(), 0, size)));
            double smallUs =
                    DataplaneRounds.interleaved(
                                    SMALL_WRITES,
                                    SMALL,
                                    EngineRounds.transfer(
                                            a,
                                            TransferRequest.write(
                                                    source, 0, target.name(), 0, SMALL)))
                            .micros(0);

            ReplicateConfig own = new ReplicateConfig(1, List.of(), true);
            double put =
                    DataplaneRounds.gbps(
                            repeats, size, EngineRounds.puts(a.store(), source, size, own));
            a.store().putFrom("bench/get", source, 0, size, own);
            double getGbps =
                    DataplaneRounds.gbps(
                            repeats,
                            size,
                            EngineRounds.rangeReads(c.store(), "bench/get", size, RANGE, target));
            a.store().remove("bench/get");
            return new DataplaneBench.Line(
                    String.format(
                            Locale.ROOT,
                            "{\"engine\":\"mooncake\",\"protocol\":\"tcp\",\"size\":%d,"
                                    + "\"streams\":%d,\"repeats\":%d,\"memcpy_gbps\":%.3f,\"socket_gbps\":%.3f,"
                                    + "\"tcp_gbps\":%.3f,\"tcp_vs_socket\":%.3f,\"tcp_vs_memcpy\":%.3f,"
                                    + "\"tcp_read_gbps\":%.3f,\"tcp_read_vs_socket\":%.3f,"
                                    + "\"write_exact\":%b,\"small_write_us\":%.1f,"
                                    + "\"put_gbps\":%.3f,\"tcp_get_ranges_gbps\":%.3f,"
                                    + "\"tcp_get_ranges_vs_socket\":%.3f,\"get_ranges\":%d,"
                                    + "\"socket_rounds_gbps\":%s,\"tcp_rounds_gbps\":%s}",
                            size,
                            STREAMS,
                            repeats,
                            memcpy,
                            socket,
                            tcp,
                            tcp / socket,
                            tcp / memcpy,
                            tcpRead,
                            tcpRead / socket,
                            exact,
                            smallUs,
                            put,
                            getGbps,
                            getGbps / socket,
                            EngineRounds.ranges(size, RANGE),
                            moved.roundsJson(1),
                            moved.roundsJson(2)),
                    exact);
        }
    }
}
