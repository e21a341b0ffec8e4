package io.weightrelay.lab.bench;

import io.weightrelay.lab.bench.DataplaneRounds.Round;
import io.weightrelay.lab.cluster.LabSecrets;
import io.weightrelay.lab.hosts.Host;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.HostProcess;
import io.weightrelay.lab.hosts.LinkCounters;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * {@code ./relay bench dataplane --hosts}: the built-in engine's tcp transport between two hosts of
 * this machine ({@link HostLab}: separate network namespaces and {@code /dev/shm}, a bridge between
 * them), authenticated with a secret, against a plain socket copy between the same two hosts with
 * as many streams, from and into the same segment memory, and against one thread's native {@code
 * memcpy} of the source's segment on its host, in the same rounds. Each end is a {@link
 * DataplanePeer} in its host, which times its own rounds. A third engine with a wrong secret must
 * be refused ({@code authenticated}, the line's check). Needs root.
 */
final class BuiltinOnHosts {

    private BuiltinOnHosts() {}

    /** Runs the benchmark on fresh hosts named with {@code --prefix}. */
    static DataplaneBench.Line line(DataplaneOptions o) throws Exception {
        long size = o.size();
        Path logs = Files.createTempDirectory(o.prefix() + "-bench-");
        long shm = 2 * size + (64L << 20); // the source copies its segment for memcpy
        try (LabSecrets secrets = LabSecrets.create("dataplane-bench");
                HostLab lab =
                        HostLab.create(o.prefix(), List.of("redis", "source", "target"), shm)) {
            String redisUri = lab.host("redis").startRedis(6379, logs);
            String keyPrefix = "wr:bench:" + UUID.randomUUID().toString().substring(0, 8) + ":";
            Host targetHost = lab.host("target");
            Peers peers =
                    new Peers(
                            redisUri,
                            keyPrefix,
                            secrets.dataplaneSecretFile(),
                            size,
                            o.streams(),
                            logs);
            HostProcess target = peers.start(targetHost, "bench-target");
            HostProcess source = peers.start(lab.host("source"), "bench-source");
            JsonNode targetReady = target.require(null);
            JsonNode sourceReady = source.require(null);
            int port = target.require("listen").get("port").asInt();
            source.require("connect " + targetHost.dataAddress() + " " + port);

            Round memcpy = () -> source.require("memcpy-round").get("seconds").asDouble();
            Round socket = () -> source.require("socket-round").get("seconds").asDouble();
            EngineWrites engine = new EngineWrites(lab, source);
            DataplaneRounds.warmUp(memcpy, socket, engine);
            engine.wire = new LinkCounters.Traffic(0, 0);
            JsonNode before = source.require("counters");
            DataplaneRounds.Rates moved =
                    DataplaneRounds.measured(o.repeats(), size, memcpy, socket, engine);
            JsonNode after = source.require("counters");
            long engineBytes =
                    after.get("tcp_written").asLong() - before.get("tcp_written").asLong();
            JsonNode intruder = source.require("intruder bench-target");
            boolean authenticated =
                    targetReady.get("authenticated").asBoolean()
                            && sourceReady.get("authenticated").asBoolean()
                            && intruder.get("refused").asBoolean();
            double memcpyGbps = moved.gbps(0);
            double socketGbps = moved.gbps(1);
            double tcpGbps = moved.gbps(2);
            return new DataplaneBench.Line(
                    String.format(
                            Locale.ROOT,
                            "{\"size\":%d,\"streams\":%d,\"repeats\":%d,\"hosts\":2,\"memcpy_gbps\":%.3f,"
                                    + "\"socket_gbps\":%.3f,\"tcp_gbps\":%.3f,"
                                    + "\"tcp_vs_socket\":%.3f,\"tcp_vs_memcpy\":%.3f,\"authenticated\":%s,"
                                    + "\"intruder_error\":\"%s\",\"engine_tcp_bytes\":%d,"
                                    + "\"interface_tcp_payload_bytes\":%d,\"interface_frames\":%d,"
                                    + "\"socket_rounds_gbps\":%s,\"tcp_rounds_gbps\":%s}",
                            size,
                            o.streams(),
                            o.repeats(),
                            memcpyGbps,
                            socketGbps,
                            tcpGbps,
                            tcpGbps / socketGbps,
                            tcpGbps / memcpyGbps,
                            authenticated,
                            intruder.path("error").asString(),
                            engineBytes,
                            engine.wire.tcpPayload(),
                            engine.wire.packets(),
                            moved.roundsJson(1),
                            moved.roundsJson(2)),
                    authenticated);
        }
    }

    /**
     * The source's engine writing its segment into the target's, as a round, counting what the
     * source host sent on its data-plane link during each.
     */
    private static final class EngineWrites implements Round {
        private final HostLab lab;
        private final HostProcess source;
        LinkCounters.Traffic wire = new LinkCounters.Traffic(0, 0);

        EngineWrites(HostLab lab, HostProcess source) {
            this.lab = lab;
            this.source = source;
        }

        @Override
        public double seconds() throws Exception {
            LinkCounters c0 = lab.counters();
            double s = source.require("engine-round bench-target").get("seconds").asDouble();
            wire = wire.plus(lab.counters().minus(c0).hosts().get("source").dataSent());
            return s;
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
}
