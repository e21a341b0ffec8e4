package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.dataplane.bench.Baselines;
import io.weightrelay.lab.bench.DataplaneRounds.Round;
import java.security.SecureRandom;
import java.util.Locale;
import java.util.UUID;

/**
 * {@code ./relay bench dataplane} on the built-in engine, on this machine: three engines in this
 * JVM, {@code a} and {@code b} with one node label (local transport), {@code c} with another (tcp
 * over loopback), against the yardsticks on the same memory in the same rounds: one thread's native
 * {@code memcpy} and a plain loopback socket copy with as many streams as the engine uses. Peak
 * shared memory is four times the size; every segment is removed at the end.
 */
final class BuiltinOnOneHost {

    private BuiltinOnOneHost() {}

    /**
     * Runs the benchmark; its check: the tcp engine authenticated its peer, and a put that prefers
     * the writer's own segment sent no byte over tcp ({@code put_tcp_bytes} 0).
     */
    static DataplaneBench.Line line(DataplaneOptions o) throws Exception {
        long size = o.size();
        int streams = o.streams();
        String prefix = "wr:bench:" + UUID.randomUUID().toString().substring(0, 8) + ":";
        // A fresh secret per run: the tcp figure includes the handshake of every connection.
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        try (Dataplane a = open("bench-node-1", prefix, o, secret);
                Dataplane b = open("bench-node-1", prefix, o, secret);
                Dataplane c = open("bench-node-2", prefix, o, secret)) {
            Segment source = a.createSegment("bench-source", size);
            Segment pub = a.createSegment("bench-pub", size + 4096);
            Segment target = b.createReceiveSegment("bench-target", size); // c writes as a peer
            Segment remoteSource = c.createSegment("bench-remote-source", size);
            SegmentBytes.fill(source);
            SegmentBytes.fill(remoteSource);

            DataplaneRounds.Rates moved =
                    DataplaneRounds.interleaved(
                            o.repeats(),
                            size,
                            Round.ofRate(size, () -> Baselines.memcpy(pub, source, size, 1)),
                            write(a, source, target, size),
                            Round.ofRate(
                                    size,
                                    () -> Baselines.socket(target, remoteSource, size, streams, 1)),
                            write(c, remoteSource, target, size));
            double memcpy = moved.gbps(0);
            double local = moved.gbps(1);
            double socket = moved.gbps(2);
            double tcp = moved.gbps(3);
            // The read direction, as a loader pulls: c reads b's segment over tcp.
            double tcpRead =
                    DataplaneRounds.gbps(
                            o.repeats(),
                            size,
                            EngineRounds.transfer(
                                    c,
                                    TransferRequest.read(remoteSource, 0, target.name(), 0, size)));

            ReplicateConfig own = ReplicateConfig.preferLocal(pub.name());
            Counters beforePut = a.counters();
            double put =
                    DataplaneRounds.gbps(
                            o.repeats(), size, EngineRounds.puts(a.store(), source, size, own));
            long putTcpBytes = a.counters().minus(beforePut).tcpTotal();

            a.store().putFrom("bench/get", source, 0, size, own);
            double get =
                    DataplaneRounds.gbps(
                            o.repeats(),
                            size,
                            EngineRounds.rangeReads(
                                    b.store(), "bench/get", size, (size + 15) / 16, target));
            // A loader's pull over tcp: tensor-sized ranges (1 MiB at the default size), so the
            // cost of each request's round trip shows, not only the bytes.
            double tcpGet =
                    DataplaneRounds.gbps(
                            o.repeats(),
                            size,
                            EngineRounds.rangeReads(
                                    c.store(),
                                    "bench/get",
                                    size,
                                    Math.max(1, size / 256),
                                    remoteSource));
            a.store().remove("bench/get");
            target.close();
            remoteSource.close();

            Segment cold = b.createSegment("bench-cold", size);
            double coldGbps = size / write(a, source, cold, size).seconds() / 1e9;
            cold.close();

            boolean authenticated = c.config().authenticated();
            return new DataplaneBench.Line(
                    String.format(
                            Locale.ROOT,
                            "{\"size\":%d,\"streams\":%d,\"memcpy_gbps\":%.3f,\"local_gbps\":%.3f,"
                                    + "\"local_vs_memcpy\":%.3f,\"socket_gbps\":%.3f,"
                                    + "\"tcp_gbps\":%.3f,\"tcp_vs_socket\":%.3f,"
                                    + "\"tcp_vs_memcpy\":%.3f,\"tcp_read_gbps\":%.3f,"
                                    + "\"tcp_get_ranges_gbps\":%.3f,"
                                    + "\"tcp_get_ranges_vs_socket\":%.3f,"
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
                            authenticated),
                    authenticated && putTcpBytes == 0);
        }
    }

    /** One write of {@code size} bytes from {@code source} into {@code into}, as a round. */
    private static Round write(Dataplane from, Segment source, Segment into, long size) {
        return EngineRounds.transfer(from, TransferRequest.write(source, 0, into.name(), 0, size));
    }

    private static Dataplane open(String label, String prefix, DataplaneOptions o, byte[] secret) {
        return Dataplane.open(
                DataplaneConfig.builder(label)
                        .redisUri(o.redis())
                        .keyPrefix(prefix)
                        .secret(secret)
                        .tcpStreams(o.streams())
                        .localThreads(2)
                        .build());
    }
}
