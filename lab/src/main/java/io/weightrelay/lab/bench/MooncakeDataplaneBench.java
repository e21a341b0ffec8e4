package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.dataplane.bench.Baselines;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.lab.cluster.MooncakeServices;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * {@code ./relay bench dataplane --engine mooncake [--size BYTES] [--repeats N] [--redis URI]}: the
 * real Mooncake Transfer Engine on its tcp transport against a plain loopback socket, in the same
 * run, from and into the same memory. Two Mooncake data planes of this JVM, each driving its agent
 * of the pinned wheel in the namespace of a {@link MooncakeLab} (whose master the Store needs;
 * every Mooncake listener on that namespace's loopback), each with a receive segment of {@code
 * size} bytes: shared memory this JVM and its agent both map. Rates are GB/s (10^9 bytes per
 * second), the median of {@code repeats} rounds after one warm-up, engine rounds alternating with
 * socket rounds so both see the same load. One JSON line:
 *
 * <ul>
 *   <li>{@code tcp_gbps}: one Transfer Engine write of {@code size} bytes from the source segment
 *       into the target's, as the data plane's API issues it: one agent command, one {@code
 *       batch_transfer_sync_write} of one range, which Mooncake's tcp transport moves over one
 *       connection; {@code socket_gbps}: the native plain-socket copy with that parallelism ({@code
 *       streams}: 1) between the same two segments; {@code tcp_vs_socket} = tcp / socket
 *   <li>{@code tcp_read_gbps}, {@code tcp_read_vs_socket}: the same bytes read back (the target's
 *       engine reading the source segment), against the same socket figure
 *   <li>{@code write_exact}: the target's bytes equal the source's after one write into a zeroed
 *       target (exit 1 otherwise)
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
public final class MooncakeDataplaneBench {

    /** Connections Mooncake's tcp transport moves one request over, and the socket's streams. */
    static final int STREAMS = 1;

    static final int SMALL_WRITES = 200;

    static final int SMALL = 4096;

    private static final long RANGE = 1 << 20;
    private static final Duration WAIT = Duration.ofMinutes(5);

    private MooncakeDataplaneBench() {}

    /** {@code ./relay bench dataplane --engine mooncake}: prints the JSON line. */
    public static void run(DataplaneOptions options) throws Exception {
        String line;
        try {
            line = line(options.size(), options.repeats(), options.redis());
        } catch (MooncakeServices.StartException e) {
            System.err.println("relay bench dataplane: " + e.getMessage());
            System.exit(3);
            return;
        }
        System.out.println(line);
        if (!line.contains("\"write_exact\":true")) {
            System.exit(1);
        }
    }

    /** Runs the benchmark on a Mooncake lab of its own and returns the JSON line. */
    public static String line(long size, int repeats, String redis)
            throws MooncakeServices.StartException, IOException, InterruptedException {
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
                                        "bench-mc-a", redis, prefix, size + (64L << 20)));
                Dataplane c =
                        Dataplane.open(mooncake.dataplaneConfig("bench-mc-c", redis, prefix, 0));
                Segment source = a.createReceiveSegment("bench-mc-source", size);
                Segment target = c.createReceiveSegment("bench-mc-target", size)) {
            fill(source);
            Runnable write = transfer(a, TransferRequest.write(source, 0, target.name(), 0, size));
            Runnable read = transfer(c, TransferRequest.read(target, 0, source.name(), 0, size));

            zero(target);
            write.run(); // warm-up, and the bytes checked
            boolean exact = same(source, target);
            Baselines.socket(target, source, size, STREAMS, 1);
            double[] socket = new double[repeats];
            double[] tcp = new double[repeats];
            for (int i = 0; i < repeats; i++) {
                socket[i] = Baselines.socket(target, source, size, STREAMS, 1);
                tcp[i] = rate(size, write);
            }
            double socketGbps = HostsDataplaneBench.median(socket);
            double tcpGbps = HostsDataplaneBench.median(tcp);
            double tcpRead = measure(repeats, size, read);

            Runnable small = transfer(a, TransferRequest.write(source, 0, target.name(), 0, SMALL));
            small.run();
            double[] smallUs = new double[SMALL_WRITES];
            for (int i = 0; i < SMALL_WRITES; i++) {
                long t0 = System.nanoTime();
                small.run();
                smallUs[i] = (System.nanoTime() - t0) / 1e3;
            }

            ReplicateConfig own = new ReplicateConfig(1, List.of(), true);
            int[] round = {0};
            double put =
                    measure(
                            repeats,
                            size,
                            () -> {
                                String key = "bench/put/" + round[0]++;
                                a.store().putFrom(key, source, 0, size, own);
                                a.store().remove(key);
                            });
            a.store().putFrom("bench/get", source, 0, size, own);
            List<ReadRange> ranges = new ArrayList<>();
            for (long off = 0; off < size; off += RANGE) {
                ranges.add(new ReadRange(off, Math.min(RANGE, size - off), target, off));
            }
            double get =
                    measure(
                            repeats,
                            size,
                            () -> {
                                for (long n : c.store().getIntoRanges("bench/get", ranges)) {
                                    if (n < 0) {
                                        throw new IllegalStateException("range failed: " + n);
                                    }
                                }
                            });
            a.store().remove("bench/get");
            return String.format(
                    Locale.ROOT,
                    "{\"engine\":\"mooncake\",\"protocol\":\"tcp\",\"size\":%d,\"streams\":%d,"
                            + "\"repeats\":%d,\"socket_gbps\":%.3f,\"tcp_gbps\":%.3f,"
                            + "\"tcp_vs_socket\":%.3f,\"tcp_read_gbps\":%.3f,"
                            + "\"tcp_read_vs_socket\":%.3f,\"write_exact\":%b,"
                            + "\"small_write_us\":%.1f,\"put_gbps\":%.3f,"
                            + "\"tcp_get_ranges_gbps\":%.3f,\"tcp_get_ranges_vs_socket\":%.3f,"
                            + "\"get_ranges\":%d,\"socket_rounds_gbps\":%s,\"tcp_rounds_gbps\":%s}",
                    size,
                    STREAMS,
                    repeats,
                    socketGbps,
                    tcpGbps,
                    tcpGbps / socketGbps,
                    tcpRead,
                    tcpRead / socketGbps,
                    exact,
                    HostsDataplaneBench.median(smallUs),
                    put,
                    get,
                    get / socketGbps,
                    ranges.size(),
                    HostsDataplaneBench.rounds(socket),
                    HostsDataplaneBench.rounds(tcp));
        }
    }

    /** Every 8-byte word of the segment set to a value of its position (0 with {@code zero}). */
    /** One transfer of {@code request} by {@code from}'s engine, waited for, as a round. */
    private static Runnable transfer(Dataplane from, TransferRequest request) {
        return () -> from.engine().transfer(List.of(request), WAIT);
    }

    private static void fill(Segment segment) {
        write(segment, false);
    }

    private static void zero(Segment segment) {
        write(segment, true);
    }

    private static void write(Segment segment, boolean zero) {
        for (long off = 0; off < segment.size(); off += 1 << 30) {
            int len = (int) Math.min(1 << 30, segment.size() - off);
            ByteBuffer view = segment.byteBuffer(off, len);
            for (int i = 0; i + 8 <= len; i += 8) {
                view.putLong(i, zero ? 0 : (off + i) * 0x9E3779B97F4A7C15L);
            }
        }
    }

    private static boolean same(Segment a, Segment b) {
        for (long off = 0; off < a.size(); off += 1 << 30) {
            int len = (int) Math.min(1 << 30, a.size() - off);
            if (a.byteBuffer(off, len).mismatch(b.byteBuffer(off, len)) >= 0) {
                return false;
            }
        }
        return true;
    }

    /** One warm-up, then the median rate of {@code repeats} rounds, in GB/s. */
    private static double measure(int repeats, long bytes, Runnable round) {
        round.run();
        double[] rates = new double[repeats];
        for (int i = 0; i < repeats; i++) {
            rates[i] = rate(bytes, round);
        }
        return HostsDataplaneBench.median(rates);
    }

    private static double rate(long bytes, Runnable round) {
        long t0 = System.nanoTime();
        round.run();
        return bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
    }
}
