package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.bench.CopyRates;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The rates {@code bench update} bounds an update with, in bytes per second, measured on this
 * machine in the same run, each alone.
 *
 * <p>The bound ({@link #boundSeconds}) gives the update the parallelism it may use itself: local
 * bytes at the fastest copy rate the machine showed with up to {@link #copyThreads} threads (the C
 * library's {@code memcpy}, one slice per thread, or one thread's Java copy if that was faster),
 * tcp bytes at the fastest rate of {@link #streams} concurrent loopback streams or of one. Both
 * kinds of work take the same cores, so their times add. An update must also prove every byte it
 * delivers before its engine installs it, and a one-sided write lands in the receiver's buffer
 * without the receiver touching it: the receiver reads every delivered byte once to verify it. So
 * the bound adds one read of the delivered bytes at the fastest CRC32C rate the machine showed on
 * {@link #copyThreads} threads ({@link #moveSeconds} is the bound without it). A bound from faster
 * rates is only ever stricter, so the faster of each pair is taken, and an update that beats the
 * bound means the yardstick missed a way the machine moves bytes, not that the update is good.
 *
 * <p>{@link #singleThreadBoundSeconds} is the bound {@code bench update} printed before: one
 * thread's Java copy and one stream, which the update's two copy threads and several streams per
 * peer beat by up to 1.5x (compat mode, 2026-12-05).
 *
 * @param memcpyOneThread one thread copying warm memory with a direct {@link ByteBuffer}'s bulk put
 *     (the old yardstick)
 * @param memcpyParallel {@link #copyThreads} threads each copying their own warm slice with the C
 *     library's {@code memcpy}, together
 * @param copyThreads the threads of {@link #memcpyParallel} and {@link #checksumParallel}
 * @param checksumParallel {@link #copyThreads} threads each taking the CRC32C of their own warm
 *     slice, together
 * @param socketOneStream one plain loopback TCP stream, 4 MiB writes
 * @param socketStreams {@link #streams} such streams at once, together
 * @param streams the streams of {@link #socketStreams}
 */
record Yardsticks(
        double memcpyOneThread,
        double memcpyParallel,
        int copyThreads,
        double checksumParallel,
        double socketOneStream,
        double socketStreams,
        int streams) {

    /** Bytes each copy thread copies per round: past the caches, as the update's copies are. */
    static final int COPY_SLICE = 256 << 20;

    /** Bytes one measurement moves over loopback, over all its streams. */
    static final long SOCKET_BYTES = 1L << 30;

    static final int SOCKET_CHUNK = 4 << 20;

    Yardsticks {
        if (copyThreads < 1 || streams < 1) {
            throw new IllegalArgumentException(
                    "copy threads and streams must be 1 or more, not "
                            + copyThreads
                            + " and "
                            + streams);
        }
    }

    /**
     * Measures every rate: the copies best of four rounds, the sockets best of three transfers (one
     * stream alone moved between 1.2 and 2.9 GB/s from run to run on the shared two cores).
     */
    static Yardsticks measure(int copyThreads, int streams) throws Exception {
        double oneThread = javaCopyBytesPerSecond(COPY_SLICE, 4);
        double parallel = 0;
        double checksum = 0;
        for (int round = 0; round < 4; round++) {
            parallel = Math.max(parallel, parallelMemcpy(copyThreads, COPY_SLICE).rate());
            checksum = Math.max(checksum, parallelChecksum(copyThreads, COPY_SLICE).rate());
        }
        double oneStream = 0;
        double manyStreams = 0;
        for (int round = 0; round < 3; round++) {
            oneStream = Math.max(oneStream, loopback(1, SOCKET_BYTES).rate());
            manyStreams = Math.max(manyStreams, loopback(streams, SOCKET_BYTES).rate());
        }
        return new Yardsticks(
                oneThread, parallel, copyThreads, checksum, oneStream, manyStreams, streams);
    }

    /** The faster of each rate of this and {@code other}, measured with the same parallelism. */
    Yardsticks best(Yardsticks other) {
        if (other.copyThreads != copyThreads || other.streams != streams) {
            throw new IllegalArgumentException(
                    "yardsticks of "
                            + copyThreads
                            + " threads and "
                            + streams
                            + " streams cannot be combined with "
                            + other.copyThreads
                            + " and "
                            + other.streams);
        }
        return new Yardsticks(
                Math.max(memcpyOneThread, other.memcpyOneThread),
                Math.max(memcpyParallel, other.memcpyParallel),
                copyThreads,
                Math.max(checksumParallel, other.checksumParallel),
                Math.max(socketOneStream, other.socketOneStream),
                Math.max(socketStreams, other.socketStreams),
                streams);
    }

    /** The rate of local bytes in the bound: the fastest copy measured. */
    double localRate() {
        return Math.max(memcpyOneThread, memcpyParallel);
    }

    /** The rate of tcp bytes in the bound: the fastest loopback transfer measured. */
    double tcpRate() {
        return Math.max(socketOneStream, socketStreams);
    }

    /**
     * The least time the machine needs to move these bytes with the update's parallelism, and to
     * read the {@code deliveredBytes} that landed in workers' buffers once to verify them.
     */
    double boundSeconds(long localBytes, long tcpBytes, long deliveredBytes) {
        return moveSeconds(localBytes, tcpBytes) + deliveredBytes / checksumParallel;
    }

    /** The least time the machine needs to move these bytes with the update's parallelism. */
    double moveSeconds(long localBytes, long tcpBytes) {
        return localBytes / localRate() + tcpBytes / tcpRate();
    }

    /** The old bound: one thread's copy and one stream. */
    double singleThreadBoundSeconds(long localBytes, long tcpBytes) {
        return localBytes / memcpyOneThread + tcpBytes / socketOneStream;
    }

    /** Bytes moved in a time. */
    record Moved(long bytes, long nanos) {
        double rate() {
            return bytes / (nanos / 1e9);
        }
    }

    /** One thread's bulk put between two warm direct buffers; the best of {@code rounds}. */
    static double javaCopyBytesPerSecond(int size, int rounds) {
        return CopyRates.javaCopyBytesPerSecond(size, rounds);
    }

    /** {@code threads} threads each {@code memcpy}-ing a warm slice of their own, together. */
    static Moved parallelMemcpy(int threads, int slice) throws Exception {
        return new Moved((long) threads * slice, CopyRates.parallelMemcpyNanos(threads, slice));
    }

    /** {@code threads} threads each taking the CRC32C of a warm slice of their own, together. */
    static Moved parallelChecksum(int threads, int slice) throws Exception {
        return new Moved((long) threads * slice, CopyRates.parallelCrc32cNanos(threads, slice));
    }

    /**
     * {@code streams} plain loopback TCP connections at once, each writing its share of {@code
     * total} bytes (whole 4 MiB writes, at least one) while a thread of its own reads them, started
     * together once every connection is up; the bytes read and the time until the last stream
     * ended.
     */
    static Moved loopback(int streams, long total) throws Exception {
        long perStream = Math.max(1, total / streams / SOCKET_CHUNK) * SOCKET_CHUNK;
        ExecutorService pool = Executors.newFixedThreadPool(2 * streams);
        List<SocketChannel> open = new ArrayList<>();
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0), streams);
            List<SocketChannel> writers = new ArrayList<>();
            List<SocketChannel> readers = new ArrayList<>();
            for (int s = 0; s < streams; s++) {
                SocketChannel out = SocketChannel.open(server.getLocalAddress());
                open.add(out);
                writers.add(out);
                SocketChannel in = server.accept();
                open.add(in);
                readers.add(in);
            }
            CyclicBarrier start = new CyclicBarrier(2 * streams + 1);
            List<Future<Long>> received = new ArrayList<>();
            List<Future<Long>> sent = new ArrayList<>();
            for (int s = 0; s < streams; s++) {
                SocketChannel out = writers.get(s);
                SocketChannel in = readers.get(s);
                sent.add(pool.submit(() -> write(out, perStream, start)));
                received.add(pool.submit(() -> read(in, start)));
            }
            start.await();
            long started = System.nanoTime();
            long bytes = 0;
            for (Future<Long> f : received) {
                bytes += f.get();
            }
            long nanos = System.nanoTime() - started;
            for (Future<Long> f : sent) {
                f.get();
            }
            return new Moved(bytes, nanos);
        } finally {
            pool.shutdownNow();
            for (SocketChannel c : open) {
                c.close();
            }
        }
    }

    private static long write(SocketChannel out, long bytes, CyclicBarrier start) throws Exception {
        ByteBuffer buf = ByteBuffer.allocateDirect(SOCKET_CHUNK);
        start.await();
        try {
            for (long sent = 0; sent < bytes; sent += SOCKET_CHUNK) {
                buf.clear();
                while (buf.hasRemaining()) {
                    out.write(buf);
                }
            }
            out.shutdownOutput();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes;
    }

    private static long read(SocketChannel in, CyclicBarrier start) throws Exception {
        ByteBuffer buf = ByteBuffer.allocateDirect(SOCKET_CHUNK);
        start.await();
        long received = 0;
        for (; ; ) {
            buf.clear();
            int n = in.read(buf);
            if (n < 0) {
                return received;
            }
            received += n;
        }
    }
}
