package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import java.util.concurrent.locks.ReentrantReadWriteLock;

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
        byte[] roleKeys = c.roleKeys().encoded();
        int ioTimeoutMs = millis(c.ioTimeout());
        int connectTimeoutMs = millis(c.connectTimeout());
        NativeStatus status =
                NativeStatus.of(
                        st ->
                                DpNative.dp_engine_create(
                                        c.nodeLabel(),
                                        hostId,
                                        c.tcpBindHost(),
                                        c.tcpPort(),
                                        c.tcpStreams(),
                                        c.localThreads(),
                                        ioTimeoutMs,
                                        connectTimeoutMs,
                                        c.maxConnections(),
                                        millis(c.idleTimeout()),
                                        c.shmDir().toString(),
                                        roleKeys,
                                        roleKeys.length,
                                        c.role().wire(),
                                        out,
                                        st));
        java.util.Arrays.fill(roleKeys, (byte) 0);
        if (status.is(DataplaneError.INVALID_ARGUMENT)) {
            throw new DataplaneException(
                    DataplaneError.INVALID_ARGUMENT,
                    "cannot start the engine (check DataplaneConfig.tcpBindHost '"
                            + c.tcpBindHost()
                            + "' and shmDir "
                            + c.shmDir()
                            + "): "
                            + status.message());
        }
        status.check("engine on " + c.tcpBindHost() + ":" + c.tcpPort());
        return new EngineHandle(out);
    }

    private static int millis(java.time.Duration d) {
        return (int) Math.max(0, Math.min(Integer.MAX_VALUE, d.toMillis()));
    }

    /** A native call on the engine, reporting into a {@code dp_status}. */
    @FunctionalInterface
    interface Call {
        int run(DpNative.dp_engine engine, DpNative.dp_status status);
    }

    /** Runs a native call on the live engine and returns what it reported. */
    NativeStatus call(Call body) {
        lock.readLock().lock();
        try {
            if (closed) {
                return new NativeStatus(DataplaneError.CLOSED.code(), "the dataplane is closed");
            }
            return NativeStatus.of(status -> body.run(engine, status));
        } finally {
            lock.readLock().unlock();
        }
    }

    int tcpPort() {
        lock.readLock().lock();
        try {
            return closed ? 0 : DpNative.dp_engine_tcp_port(engine);
        } finally {
            lock.readLock().unlock();
        }
    }

    long freeBytes(String segment) {
        long[] out = new long[1];
        call((e, st) -> DpNative.dp_segment_free_bytes(e, segment, out, st)).check(segment);
        return out[0];
    }

    Counters counters() {
        long[] c = new long[DpNative.DP_COUNTER_COUNT];
        call((e, st) -> DpNative.dp_engine_counters(e, c, st)).check("counters");
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
