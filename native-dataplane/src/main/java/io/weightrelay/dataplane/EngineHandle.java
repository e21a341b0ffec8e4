package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.ToIntFunction;

/**
 * The native engine handle. Every native call runs under the read lock; close shuts the engine down
 * first (so blocked calls return), then takes the write lock and frees it: no call ever touches a
 * freed engine.
 */
final class EngineHandle implements AutoCloseable {
    private final DpNative.dp_engine engine;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private volatile boolean closed;

    private EngineHandle(DpNative.dp_engine engine) {
        this.engine = engine;
    }

    static EngineHandle create(DataplaneConfig c, String hostId) {
        DpNative.load();
        DpNative.dp_engine out = new DpNative.dp_engine();
        byte[] secret = c.secret();
        int rc =
                DpNative.dp_engine_create(
                        c.nodeLabel(),
                        hostId,
                        c.tcpBindHost(),
                        c.tcpPort(),
                        c.tcpStreams(),
                        c.localThreads(),
                        millis(c.ioTimeout()),
                        millis(c.connectTimeout()),
                        c.maxConnections(),
                        c.shmDir().toString(),
                        secret,
                        secret.length,
                        c.remover()
                                ? DpNative.DP_ROLE_REMOVER
                                : (c.storer() ? DpNative.DP_ROLE_STORER : DpNative.DP_ROLE_PEER),
                        out);
        java.util.Arrays.fill(secret, (byte) 0);
        if (rc == DataplaneError.INVALID_ARGUMENT.code()) {
            throw new DataplaneException(
                    DataplaneError.INVALID_ARGUMENT,
                    "cannot start the engine: tcpBindHost '"
                            + c.tcpBindHost()
                            + "' is no address or resolvable name of this host, or shmDir "
                            + c.shmDir()
                            + " does not exist");
        }
        Errors.check(rc, "engine on " + c.tcpBindHost() + ":" + c.tcpPort());
        return new EngineHandle(out);
    }

    private static int millis(java.time.Duration d) {
        return (int) Math.max(0, Math.min(Integer.MAX_VALUE, d.toMillis()));
    }

    /** Runs a native call on the live engine and returns its status code. */
    int call(ToIntFunction<DpNative.dp_engine> body) {
        lock.readLock().lock();
        try {
            if (closed) {
                return DataplaneError.CLOSED.code();
            }
            return body.applyAsInt(engine);
        } finally {
            lock.readLock().unlock();
        }
    }

    int tcpPort() {
        int[] port = new int[1];
        call(
                e -> {
                    port[0] = DpNative.dp_engine_tcp_port(e);
                    return 0;
                });
        return port[0];
    }

    long freeBytes(String segment) {
        long[] out = new long[1];
        Errors.check(call(e -> DpNative.dp_segment_free_bytes(e, segment, out)), segment);
        return out[0];
    }

    Counters counters() {
        long[] c = new long[DpNative.DP_COUNTER_COUNT];
        Errors.check(call(e -> DpNative.dp_engine_counters(e, c)), "counters");
        return new Counters(c[0], c[1], c[2], c[3], c[4], c[5]);
    }

    /** Throws {@link DataplaneClosedException} once the dataplane is closed. */
    void checkOpen() {
        if (closed) {
            throw new DataplaneClosedException("dataplane");
        }
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            DpNative.dp_engine_shutdown(engine);
            lock.writeLock().lock();
            try {
                DpNative.dp_engine_destroy(engine);
            } finally {
                lock.writeLock().unlock();
            }
        }
    }
}
