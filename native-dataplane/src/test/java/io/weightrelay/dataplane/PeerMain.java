package io.weightrelay.dataplane;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A second engine in its own JVM, driven line by line over stdin/stdout by {@link PeerProcess}.
 * Args: redisUri keyPrefix nodeLabel segmentName segmentSize [ioTimeoutMs [maxConnections
 * [idleTimeoutMs]]].
 */
public final class PeerMain {
    private PeerMain() {}

    public static void main(String[] args) throws Exception {
        DataplaneConfig config =
                TestEngines.config(args[2], args[0], args[1])
                        .ioTimeout(
                                Duration.ofMillis(
                                        args.length > 5 ? Long.parseLong(args[5]) : 30000))
                        .maxConnections(args.length > 6 ? Integer.parseInt(args[6]) : 256)
                        .idleTimeout(
                                Duration.ofMillis(
                                        args.length > 7 ? Long.parseLong(args[7]) : 60000))
                        .build();
        try (Dataplane dp = Dataplane.open(config);
                Segment segment = dp.createSegment(args[3], Long.parseLong(args[4]))) {
            System.out.println("READY " + dp.tcpPort() + " " + segment.shmPath());
            System.out.flush();
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                String[] a = line.trim().split(" ");
                try {
                    String reply = handle(dp, segment, a);
                    System.out.println(reply == null ? "OK" : "OK " + reply);
                    if (a[0].equals("exit")) {
                        break;
                    }
                } catch (RuntimeException e) {
                    System.out.println(
                            "ERR " + e.getClass().getSimpleName() + " " + e.getMessage());
                }
                System.out.flush();
            }
        }
    }

    private static String handle(Dataplane dp, Segment segment, String[] a) {
        switch (a[0]) {
            case "fill" -> {
                Patterns.fill(
                        segment.byteBuffer(),
                        Integer.parseInt(a[1]),
                        Integer.parseInt(a[2]),
                        Integer.parseInt(a[3]));
                return null;
            }
            case "crc" -> {
                return Long.toString(
                        Patterns.crc(
                                segment.byteBuffer(),
                                Integer.parseInt(a[1]),
                                Integer.parseInt(a[2])));
            }
            case "put" -> {
                int size = Integer.parseInt(a[2]);
                try (RegisteredBuffer staging =
                        dp.registerBuffer(ByteBuffer.allocateDirect(size))) {
                    Patterns.fill(staging.byteBuffer(), 0, size, Integer.parseInt(a[3]));
                    dp.store()
                            .putFrom(
                                    a[1],
                                    staging,
                                    0,
                                    size,
                                    ReplicateConfig.preferLocal(segment.name()));
                }
                return null;
            }
            case "notify" -> {
                return Long.toString(
                        dp.engine()
                                .awaitNotify(
                                        a[1],
                                        Long.parseLong(a[2]),
                                        Duration.ofMillis(Long.parseLong(a[3]))));
            }
            case "register" -> {
                return Long.toString(dp.engine().registerNotify(a[1]));
            }
            case "counters" -> {
                Counters c = dp.counters();
                return c.localRead()
                        + " "
                        + c.localWritten()
                        + " "
                        + c.tcpRead()
                        + " "
                        + c.tcpWritten()
                        + " "
                        + c.tcpServedRead()
                        + " "
                        + c.tcpServedWritten();
            }
            case "free" -> {
                return Long.toString(segment.freeBytes());
            }
            case "exit" -> {
                return null;
            }
            default -> throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }
}
