package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.dataplane.bench.Baselines;
import io.weightrelay.lab.hosts.Agent;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * One side of {@link BuiltinOnHosts}, run inside a host and driven over stdin (one command a line,
 * one JSON answer a line on stdout). It opens an authenticated engine on the host's data-plane
 * address with one segment, and serves or sends the plain-socket baseline from and into that same
 * segment memory, so both transports move the same bytes between the same two hosts.
 *
 * <pre>
 * --name N --bind ADDRESS --redis URI --prefix wr:... --secret-file F --size BYTES --streams S
 *   target: listen                  -> {"port":P}  (accepts S streams, echoes one byte per share)
 *   source: connect ADDRESS PORT    -> {}          (S plain sockets to the target)
 *   source: socket-round            -> {"seconds":s}
 *   source: memcpy-round            -> {"seconds":s}  (one thread's native memcpy of the segment)
 *   source: engine-round SEGMENT    -> {"seconds":s}
 *   source: intruder SEGMENT        -> {"refused":true|false,"error":...} (an engine with a wrong secret)
 * </pre>
 */
public final class DataplanePeer {

    private static final int SLICE = 4 << 20;
    private static final Duration WAIT = Duration.ofMinutes(5);

    private final Args args;
    private final long size;
    private final int streams;
    private final Dataplane dataplane;
    private final Segment segment;
    private Segment copy;
    private final List<SocketChannel> sockets = new ArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();

    private record Args(
            String name,
            String bind,
            String redis,
            String prefix,
            byte[] secret,
            long size,
            int streams) {}

    private DataplanePeer(Args args) {
        this.args = args;
        this.size = args.size();
        this.streams = args.streams();
        this.dataplane = Dataplane.open(config(args.name(), args.secret(), streams));
        // a receive segment: peers write only into those (a store segment refuses their writes)
        this.segment = dataplane.createReceiveSegment(args.name(), size);
        SegmentBytes.fill(segment);
    }

    /** An engine of this host's, on its data-plane address, named {@code name}. */
    private DataplaneConfig config(String name, byte[] secret, int tcpStreams) {
        return DataplaneConfig.builder(name)
                .redisUri(args.redis())
                .keyPrefix(args.prefix())
                .tcpBindHost(args.bind())
                .tcpStreams(tcpStreams)
                .localThreads(2)
                .secret(secret)
                .build();
    }

    public static void main(String[] argv) throws Exception {
        io.weightrelay.lab.Args a = new io.weightrelay.lab.Args(argv);
        Agent agent = Agent.claimStdout();
        byte[] secret = Files.readString(Path.of(a.get("secret-file", ""))).strip().getBytes();
        DataplanePeer peer =
                new DataplanePeer(
                        new Args(
                                a.get("name", "peer"),
                                a.get("bind", "127.0.0.1"),
                                a.get("redis", "redis://127.0.0.1:6379"),
                                a.get("prefix", "wr:bench:"),
                                secret,
                                a.getLong("size", 1L << 30),
                                a.getInt("streams", 2)));
        agent.say(
                "{\"ok\":true,\"authenticated\":" + peer.dataplane.config().authenticated() + "}");
        agent.serve(peer::handle);
        peer.close();
    }

    private String handle(String[] w) throws Exception {
        return switch (w[0]) {
            case "listen" -> "{\"ok\":true,\"port\":" + listen() + "}";
            case "connect" -> {
                connect(w[1], Integer.parseInt(w[2]));
                yield "{\"ok\":true}";
            }
            case "socket-round" -> seconds(this::socketRound);
            case "memcpy-round" -> memcpyRound();
            case "engine-round" ->
                    seconds(
                            () ->
                                    dataplane
                                            .engine()
                                            .transfer(
                                                    List.of(
                                                            TransferRequest.write(
                                                                    segment, 0, w[1], 0, size)),
                                                    WAIT));
            case "counters" -> {
                var c = dataplane.counters();
                yield String.format(
                        Locale.ROOT,
                        "{\"ok\":true,\"tcp_written\":%d,\"tcp_read\":%d}",
                        c.tcpWritten(),
                        c.tcpRead());
            }
            case "intruder" -> intruder(w[1]);
            default -> throw new IllegalArgumentException("unknown command " + w[0]);
        };
    }

    private interface Round {
        void run() throws Exception;
    }

    private static String seconds(Round round) throws Exception {
        long t0 = System.nanoTime();
        round.run();
        return seconds((System.nanoTime() - t0) / 1e9);
    }

    private static String seconds(double seconds) {
        return String.format(Locale.ROOT, "{\"ok\":true,\"seconds\":%.6f}", seconds);
    }

    /**
     * The memcpy yardstick on this host: the segment copied by one thread into a second segment of
     * this host's shared memory, made on first use (so only the source holds one), timed natively.
     */
    private String memcpyRound() {
        if (copy == null) {
            copy = dataplane.createReceiveSegment(args.name() + "-copy", size);
        }
        return seconds(size / (Baselines.memcpy(copy, segment, size, 1) * 1e9));
    }

    /** Accepts {@code streams} connections; each reads its share into the segment, then acks. */
    private int listen() throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress(args.bind(), 0), streams);
        int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
        pool.submit(
                () -> {
                    for (int i = 0; i < streams; i++) {
                        SocketChannel s = server.accept();
                        int stream = i;
                        pool.submit(() -> serve(s, stream));
                    }
                    server.close();
                    return null;
                });
        return port;
    }

    private Void serve(SocketChannel s, int stream) throws IOException {
        try (s) {
            tune(s);
            long share = (size + streams - 1) / streams;
            long begin = Math.min(size, share * stream);
            long end = Math.min(size, begin + share);
            ByteBuffer ack = ByteBuffer.allocateDirect(1);
            while (true) {
                for (long o = begin; o < end; o += SLICE) {
                    ByteBuffer into = segment.byteBuffer(o, (int) Math.min(SLICE, end - o));
                    while (into.hasRemaining()) {
                        if (s.read(into) < 0) {
                            return null;
                        }
                    }
                }
                ack.clear().put((byte) 1).flip();
                while (ack.hasRemaining()) {
                    s.write(ack);
                }
            }
        }
    }

    private void connect(String host, int port) throws IOException {
        for (int i = 0; i < streams; i++) {
            SocketChannel s = SocketChannel.open(new InetSocketAddress(host, port));
            tune(s);
            sockets.add(s);
        }
    }

    /** Each stream sends its share from the segment; the round ends when every share is acked. */
    private void socketRound() throws Exception {
        long share = (size + streams - 1) / streams;
        List<Future<Void>> done = new ArrayList<>();
        for (int i = 0; i < streams; i++) {
            SocketChannel s = sockets.get(i);
            long begin = Math.min(size, share * i);
            long end = Math.min(size, begin + share);
            done.add(
                    pool.submit(
                            () -> {
                                for (long o = begin; o < end; o += SLICE) {
                                    ByteBuffer from =
                                            segment.byteBuffer(o, (int) Math.min(SLICE, end - o));
                                    while (from.hasRemaining()) {
                                        s.write(from);
                                    }
                                }
                                ByteBuffer ack = ByteBuffer.allocateDirect(1);
                                while (ack.hasRemaining()) {
                                    if (s.read(ack) < 0) {
                                        throw new IOException("target closed the stream");
                                    }
                                }
                                return null;
                            }));
        }
        for (Future<Void> f : done) {
            f.get();
        }
    }

    /**
     * An engine on this host with another secret writes 4 KiB into the target segment: an
     * authenticated target refuses it before any byte lands.
     */
    private String intruder(String target) {
        byte[] wrong = "not-the-deployment-secret-0123456789".getBytes(StandardCharsets.UTF_8);
        String name = args.name() + "-intruder";
        try (Dataplane intruder = Dataplane.open(config(name, wrong, 1))) {
            Segment mine = intruder.createSegment(name, 4096);
            intruder.engine()
                    .transfer(
                            List.of(TransferRequest.write(mine, 0, target, 0, 4096)),
                            Duration.ofSeconds(30));
            return "{\"ok\":true,\"refused\":false}";
        } catch (DataplaneException e) {
            return "{\"ok\":true,\"refused\":true,\"error\":\"" + e.error() + "\"}";
        }
    }

    private static void tune(SocketChannel s) throws IOException {
        s.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    private void close() {
        pool.shutdownNow();
        for (SocketChannel s : sockets) {
            try {
                s.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
        dataplane.close();
    }
}
