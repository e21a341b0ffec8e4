package io.weightrelay.dataplane.bench;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.dataplane.TransferRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * {@code ./relay bench dataplane [--size BYTES] [--repeats N] [--redis URI]}: prints one JSON line
 * of throughputs (GB/s, 10^9 bytes per second): the median of {@code repeats} rounds after one
 * warm-up round each; engine rounds alternate with the rounds of their baseline.
 *
 * <p>Three engines in this JVM: {@code a} and {@code b} share a node label (local transport),
 * {@code c} has another (tcp over loopback). The baselines run in the same process and on the same
 * memory: single-thread native memcpy, and a plain loopback socket copy with as many streams as the
 * engine uses. Peak shared memory is four times the size; every segment is removed at the end.
 */
public final class DataplaneBench {
    private static final Duration WAIT = Duration.ofMinutes(5);

    private DataplaneBench() {}

    public static void main(String[] args) {
        long size = 256L << 20;
        int repeats = 5;
        String redis = "redis://127.0.0.1:6379";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--size" -> size = Long.parseLong(args[++i]);
                case "--repeats" -> repeats = Integer.parseInt(args[++i]);
                case "--redis" -> redis = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        System.out.println(run(size, repeats, redis));
    }

    /** Runs the benchmark and returns the JSON line. */
    public static String run(long size, int repeats, String redis) {
        String prefix = "wr:bench:" + UUID.randomUUID().toString().substring(0, 8) + ":";
        int streams = 2;
        // A fresh secret per run: the tcp figure includes the handshake of every connection.
        byte[] secret = new byte[32];
        new java.security.SecureRandom().nextBytes(secret);
        try (Dataplane a = open("bench-node-1", prefix, redis, streams, secret);
                Dataplane b = open("bench-node-1", prefix, redis, streams, secret);
                Dataplane c = open("bench-node-2", prefix, redis, streams, secret)) {
            Segment source = a.createSegment("bench-source", size);
            Segment pub = a.createSegment("bench-pub", size + 4096);
            Segment target =
                    b.createReceiveSegment("bench-target", size); // c writes into it as a peer
            Segment remoteSource = c.createSegment("bench-remote-source", size);
            fill(source);
            fill(remoteSource);

            // Each engine figure is measured in rounds interleaved with its baseline, so both
            // see the same load from whatever else runs on the machine; the median is reported.
            Runnable localRound =
                    () ->
                            a.engine()
                                    .transfer(
                                            List.of(
                                                    TransferRequest.write(
                                                            source, 0, target.name(), 0, size)),
                                            WAIT);
            Runnable tcpRound =
                    () ->
                            c.engine()
                                    .transfer(
                                            List.of(
                                                    TransferRequest.write(
                                                            remoteSource,
                                                            0,
                                                            target.name(),
                                                            0,
                                                            size)),
                                            WAIT);
            Baselines.memcpy(pub, source, size, 1); // warm-up
            localRound.run();
            tcpRound.run();
            double[] memcpyRates = new double[repeats];
            double[] localRates = new double[repeats];
            double[] socketRates = new double[repeats];
            double[] tcpRates = new double[repeats];
            for (int i = 0; i < repeats; i++) {
                memcpyRates[i] = Baselines.memcpy(pub, source, size, 1);
                localRates[i] = rate(size, localRound);
                socketRates[i] = Baselines.socket(target, remoteSource, size, streams, 1);
                tcpRates[i] = rate(size, tcpRound);
            }
            double memcpy = median(memcpyRates);
            double local = median(localRates);
            double socket = median(socketRates);
            double tcp = median(tcpRates);
            // The read direction, as a loader pulls: c reads b's segment over tcp.
            double tcpRead =
                    measure(
                            repeats,
                            size,
                            () ->
                                    c.engine()
                                            .transfer(
                                                    List.of(
                                                            TransferRequest.read(
                                                                    remoteSource,
                                                                    0,
                                                                    target.name(),
                                                                    0,
                                                                    size)),
                                                    WAIT));

            int[] round = {0};
            Counters beforePut = a.counters();
            double put =
                    measure(
                            repeats,
                            size,
                            () -> {
                                String key = "bench/put/" + round[0]++;
                                a.store()
                                        .putFrom(
                                                key,
                                                source,
                                                0,
                                                size,
                                                ReplicateConfig.preferLocal(pub.name()));
                                a.store().remove(key);
                            });
            long putTcpBytes = a.counters().minus(beforePut).tcpTotal();

            a.store()
                    .putFrom("bench/get", source, 0, size, ReplicateConfig.preferLocal(pub.name()));
            double get =
                    measureGet(repeats, size, b.store(), ranges(size, (size + 15) / 16, target));
            // A loader's pull over tcp: tensor-sized ranges (1 MiB at the default size), so the
            // cost of each request's round trip shows, not only the bytes.
            double tcpGet =
                    measureGet(
                            repeats,
                            size,
                            c.store(),
                            ranges(size, Math.max(1, size / 256), remoteSource));
            a.store().remove("bench/get");
            target.close();
            remoteSource.close();

            Segment cold = b.createSegment("bench-cold", size);
            long t0 = System.nanoTime();
            a.engine()
                    .transfer(
                            List.of(TransferRequest.write(source, 0, cold.name(), 0, size)), WAIT);
            double coldGbps = size / ((System.nanoTime() - t0) / 1e9) / 1e9;
            cold.close();

            return String.format(
                    Locale.ROOT,
                    "{\"size\":%d,\"streams\":%d,\"memcpy_gbps\":%.3f,\"local_gbps\":%.3f,"
                            + "\"local_vs_memcpy\":%.3f,\"socket_gbps\":%.3f,\"tcp_gbps\":%.3f,"
                            + "\"tcp_vs_socket\":%.3f,\"tcp_vs_memcpy\":%.3f,\"tcp_read_gbps\":%.3f,"
                            + "\"tcp_get_ranges_gbps\":%.3f,\"tcp_get_ranges_vs_socket\":%.3f,"
                            + "\"put_local_gbps\":%.3f,\"put_tcp_bytes\":%d,"
                            + "\"get_ranges_gbps\":%.3f,\"cold_local_gbps\":%.3f,"
                            + "\"authenticated\":%b}",
                    size,
                    streams,
                    memcpy,
                    local,
                    local / memcpy,
                    socket,
                    tcp,
                    tcp / socket,
                    tcp / memcpy,
                    tcpRead,
                    tcpGet,
                    tcpGet / socket,
                    put,
                    putTcpBytes,
                    get,
                    coldGbps,
                    c.config().authenticated());
        }
    }

    private static Dataplane open(
            String label, String prefix, String redis, int streams, byte[] secret) {
        return Dataplane.open(
                DataplaneConfig.builder(label)
                        .redisUri(redis)
                        .keyPrefix(prefix)
                        .secret(secret)
                        .tcpStreams(streams)
                        .localThreads(2)
                        .build());
    }

    private static void fill(Segment segment) {
        java.nio.ByteBuffer view;
        for (long off = 0; off < segment.size(); off += 1 << 30) {
            int len = (int) Math.min(1 << 30, segment.size() - off);
            view = segment.byteBuffer(off, len);
            for (int i = 0; i < len; i += 4096) {
                view.put(i, (byte) (i >>> 12));
            }
        }
    }

    /** One warm-up, then the median rate of {@code repeats} rounds, in GB/s. */
    /**
     * {@code size} bytes of object "bench/get" cut into ranges of {@code step}, into {@code into}.
     */
    private static List<ReadRange> ranges(long size, long step, Segment into) {
        List<ReadRange> out = new ArrayList<>();
        for (long off = 0; off < size; off += step) {
            out.add(new ReadRange(off, Math.min(step, size - off), into, off));
        }
        return out;
    }

    /** GB/s of {@code store} reading object "bench/get" into {@code ranges}, every range whole. */
    private static double measureGet(
            int repeats, long size, StoreClient store, List<ReadRange> ranges) {
        return measure(
                repeats,
                size,
                () -> {
                    for (long n : store.getIntoRanges("bench/get", ranges)) {
                        if (n < 0) {
                            throw new IllegalStateException("range failed: " + n);
                        }
                    }
                });
    }

    private static double measure(int repeats, long bytes, Runnable round) {
        round.run();
        double[] rates = new double[repeats];
        for (int i = 0; i < repeats; i++) {
            rates[i] = rate(bytes, round);
        }
        return median(rates);
    }

    private static double rate(long bytes, Runnable round) {
        long t0 = System.nanoTime();
        round.run();
        return bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        java.util.Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
