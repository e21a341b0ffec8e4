package io.weightrelay.lab.bench;

import io.weightrelay.lab.hosts.Host;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.HostLabException;
import io.weightrelay.lab.hosts.HostProcess;
import io.weightrelay.lab.hosts.LinkCounters;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * {@code ./relay bench dataplane --hosts [--size BYTES] [--repeats N] [--streams S] [--prefix P]}:
 * the Transfer Engine's tcp transport between two hosts of this machine ({@link HostLab}: separate
 * network namespaces and {@code /dev/shm}, a bridge between them), authenticated with a secret,
 * against a plain socket copy between the same two hosts with as many streams, from and into the
 * same segment memory, in the same run: engine rounds alternate with socket rounds, one warm-up
 * each, the median of {@code repeats} is reported (GB/s, 10^9 bytes per second). A third engine
 * with a wrong secret must be refused ({@code authenticated}). Prints one JSON line; exit 1 when
 * the intruder was not refused. Needs root.
 */
public final class HostsDataplaneBench {

    private HostsDataplaneBench() {}

    /** {@code ./relay bench dataplane --hosts}: prints the JSON line; exit 1 if not refused. */
    public static void run(DataplaneOptions options) throws Exception {
        try {
            HostLab.requireRoot();
        } catch (HostLabException e) {
            System.err.println("relay bench dataplane --hosts: " + e.getMessage());
            System.exit(3);
        }
        String line = line(options.size(), options.repeats(), options.streams(), options.prefix());
        System.out.println(line);
        if (!line.contains("\"authenticated\":true")) {
            System.exit(1);
        }
    }

    /** Runs the benchmark on fresh hosts and returns its JSON line. */
    public static String line(long size, int repeats, int streams, String prefix) throws Exception {
        Path logs = Files.createTempDirectory(prefix + "-bench-");
        Path secretFile = logs.resolve("dataplane.secret");
        Files.createFile(
                secretFile,
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        Files.writeString(secretFile, HexFormat.of().formatHex(secret), StandardCharsets.UTF_8);
        long shm = size + (64L << 20);
        try (HostLab lab = HostLab.create(prefix, List.of("redis", "source", "target"), shm)) {
            String redisUri = lab.host("redis").startRedis(6379, logs);
            String keyPrefix = "wr:bench:" + UUID.randomUUID().toString().substring(0, 8) + ":";
            Host sourceHost = lab.host("source");
            Host targetHost = lab.host("target");
            Peers peers = new Peers(redisUri, keyPrefix, secretFile, size, streams, logs);
            HostProcess target = peers.start(targetHost, "bench-target");
            HostProcess source = peers.start(sourceHost, "bench-source");
            JsonNode targetReady = target.require(null);
            JsonNode sourceReady = source.require(null);
            int port = target.require("listen").get("port").asInt();
            source.require("connect " + targetHost.dataAddress() + " " + port);

            source.require("socket-round"); // warm-up, both
            source.require("engine-round bench-target");
            double[] socket = new double[repeats];
            double[] tcp = new double[repeats];
            LinkCounters.Traffic engineWire = new LinkCounters.Traffic(0, 0);
            JsonNode before = source.require("counters");
            for (int i = 0; i < repeats; i++) {
                socket[i] = size / source.require("socket-round").get("seconds").asDouble() / 1e9;
                LinkCounters c0 = lab.counters();
                tcp[i] =
                        size
                                / source.require("engine-round bench-target")
                                        .get("seconds")
                                        .asDouble()
                                / 1e9;
                engineWire =
                        engineWire.plus(lab.counters().minus(c0).hosts().get("source").dataSent());
            }
            JsonNode after = source.require("counters");
            long engineBytes =
                    after.get("tcp_written").asLong() - before.get("tcp_written").asLong();
            JsonNode intruder = source.require("intruder bench-target");
            boolean authenticated =
                    targetReady.get("authenticated").asBoolean()
                            && sourceReady.get("authenticated").asBoolean()
                            && intruder.get("refused").asBoolean();
            double socketGbps = median(socket);
            double tcpGbps = median(tcp);
            return String.format(
                    Locale.ROOT,
                    "{\"size\":%d,\"streams\":%d,\"repeats\":%d,\"hosts\":2,"
                            + "\"socket_gbps\":%.3f,\"tcp_gbps\":%.3f,\"tcp_vs_socket\":%.3f,"
                            + "\"authenticated\":%s,\"intruder_error\":\"%s\","
                            + "\"engine_tcp_bytes\":%d,\"interface_tcp_payload_bytes\":%d,"
                            + "\"interface_frames\":%d,\"socket_rounds_gbps\":%s,"
                            + "\"tcp_rounds_gbps\":%s}",
                    size,
                    streams,
                    repeats,
                    socketGbps,
                    tcpGbps,
                    tcpGbps / socketGbps,
                    authenticated,
                    intruder.path("error").asString(),
                    engineBytes,
                    engineWire.tcpPayload(),
                    engineWire.packets(),
                    rounds(socket),
                    rounds(tcp));
        }
    }

    /**
     * What both peers are started with: their store, their secret, the transfer size, the streams.
     */
    private record Peers(
            String redisUri, String keyPrefix, Path secretFile, long size, int streams, Path logs) {

        /** A {@link DataplanePeer} named {@code name} on {@code h}, bound to its data address. */
        HostProcess start(Host h, String name) {
            return h.startJava(
                    name,
                    "256m",
                    DataplanePeer.class,
                    List.of(
                            "--name",
                            name,
                            "--bind",
                            h.dataAddress(),
                            "--redis",
                            redisUri,
                            "--prefix",
                            keyPrefix,
                            "--secret-file",
                            secretFile.toString(),
                            "--size",
                            Long.toString(size),
                            "--streams",
                            Integer.toString(streams)),
                    logs);
        }
    }

    /** Per-round rates as a JSON array. */
    static String rounds(double[] values) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            b.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.3f", values[i]));
        }
        return b.append(']').toString();
    }

    /** The median of {@code values} (the mean of the middle two of an even count). */
    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
