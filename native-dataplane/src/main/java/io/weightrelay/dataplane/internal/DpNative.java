package io.weightrelay.dataplane.internal;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.ByPtrPtr;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Opaque;
import org.bytedeco.javacpp.annotation.Platform;

/**
 * JavaCPP binding of the C API in {@code src/main/cpp/dp.h}, one static method per C function.
 * Internal: only the public classes of {@code io.weightrelay.dataplane} call it.
 */
@Platform(
        // Every source of the engine, compiled into this one library (NativeSourcesTest checks
        // that none of src/main/cpp is left out).
        include = {
            "dp.h",
            "dp_wire.cc",
            "dp_local_copy.cc",
            "dp_tcp_peer.cc",
            "dp_tcp_server.cc",
            "dp_engine.cc",
            "dp_capi.cc"
        },
        compiler = "cpp17",
        library = "jnidataplane")
public final class DpNative {
    static {
        Loader.load();
    }

    private DpNative() {}

    /** Loads the native library (idempotent). */
    public static void load() {
        Loader.load(DpNative.class);
    }

    /** Opaque {@code dp_engine*}. */
    @Opaque
    public static class dp_engine extends Pointer {
        public dp_engine() {
            super((Pointer) null);
        }

        public dp_engine(Pointer p) {
            super(p);
        }
    }

    /** Opaque {@code dp_batch*}. */
    @Opaque
    public static class dp_batch extends Pointer {
        public dp_batch() {
            super((Pointer) null);
        }

        public dp_batch(Pointer p) {
            super(p);
        }
    }

    /**
     * Opaque {@code dp_status*}: the code and message of the last call it was passed to. Made by
     * {@link #dp_status_new()}, freed by {@link #dp_status_delete}.
     */
    @Opaque
    public static class dp_status extends Pointer {
        public dp_status() {
            super((Pointer) null);
        }

        public dp_status(Pointer p) {
            super(p);
        }
    }

    /** A byte view of native memory at a fixed address, for {@link #asByteBuffer()}. */
    public static final class RawBytes extends BytePointer {
        public RawBytes(long address, long length) {
            super((Pointer) null);
            this.address = address;
            this.capacity = length;
            this.limit = length;
        }
    }

    public static final int DP_COUNTER_COUNT = 6;

    /** {@code DP_SEGMENT_STORE}: store capacity and transfer target. */
    public static final int DP_SEGMENT_STORE = 0;

    /** {@code DP_SEGMENT_RECEIVE}: transfer target only, never allocated from. */
    public static final int DP_SEGMENT_RECEIVE = 1;

    /**
     * {@code DP_SEGMENT_REPLACE}: unlink an existing file first (taking over from a dead owner).
     */
    public static final int DP_SEGMENT_REPLACE = 2;

    /** {@code DP_ROLE_PEER}: reads, writes into receive segments, notifies. */
    public static final int DP_ROLE_PEER = 1;

    /** {@code DP_ROLE_REMOVER}: also frees allocations in segments of other engines. */
    public static final int DP_ROLE_REMOVER = 2;

    /** {@code DP_ROLE_STORER}: also has owners allocate (and free) in their store segments. */
    public static final int DP_ROLE_STORER = 3;

    public static native int dp_engine_create(
            String nodeLabel,
            String hostId,
            String bindHost,
            int port,
            int tcpStreams,
            int localThreads,
            int ioTimeoutMs,
            int connectTimeoutMs,
            int maxConnections,
            int idleTimeoutMs,
            String shmDir,
            @Cast("const uint8_t*") byte[] roleKeys,
            int roleKeysLength,
            int role,
            @ByPtrPtr dp_engine out,
            dp_status status);

    public static native void dp_engine_shutdown(dp_engine engine);

    public static native void dp_engine_destroy(dp_engine engine);

    public static native int dp_engine_tcp_port(dp_engine engine);

    public static native int dp_engine_counters(
            dp_engine engine, @Cast("int64_t*") long[] out, dp_status status);

    public static native int dp_segment_create(
            dp_engine engine,
            String name,
            String shmPath,
            @Cast("int64_t") long size,
            int flags,
            @Cast("int64_t*") long[] baseOut,
            dp_status status);

    public static native int dp_segment_incarnation(
            dp_engine engine,
            String name,
            @Cast("int64_t*") long[] incarnationOut,
            dp_status status);

    public static native int dp_segment_renew(
            dp_engine engine,
            String name,
            @Cast("int64_t*") long[] incarnationOut,
            dp_status status);

    public static native int dp_segment_destroy(
            dp_engine engine, String name, int unlinkFile, dp_status status);

    public static native int dp_shm_reclaim(
            String shmDir, String fileName, @Cast("int64_t*") long[] bytesOut, dp_status status);

    public static native int dp_memory_register(
            dp_engine engine,
            @Cast("int64_t") long addr,
            @Cast("int64_t") long length,
            dp_status status);

    public static native int dp_memory_unregister(
            dp_engine engine, @Cast("int64_t") long addr, dp_status status);

    public static native int dp_segment_open(
            dp_engine engine,
            String name,
            String nodeLabel,
            String hostId,
            String host,
            int port,
            String shmPath,
            @Cast("int64_t") long size,
            @Cast("int64_t") long incarnation,
            @Cast("int64_t*") long[] segmentIdOut,
            dp_status status);

    public static native int dp_segment_close(
            dp_engine engine, @Cast("int64_t") long segmentId, dp_status status);

    public static native int dp_segment_probe(
            dp_engine engine, @Cast("int64_t") long segmentId, dp_status status);

    public static native int dp_segment_alloc(
            dp_engine engine,
            @Cast("int64_t") long segmentId,
            @Cast("int64_t") long length,
            @Cast("int64_t*") long[] offsetOut,
            dp_status status);

    public static native int dp_segment_alloc_high(
            dp_engine engine,
            @Cast("int64_t") long segmentId,
            @Cast("int64_t") long length,
            @Cast("int64_t*") long[] offsetOut,
            dp_status status);

    public static native int dp_segment_free(
            dp_engine engine,
            @Cast("int64_t") long segmentId,
            @Cast("int64_t") long offset,
            dp_status status);

    public static native int dp_segment_carve(
            dp_engine engine,
            @Cast("int64_t") long segmentId,
            @Cast("int64_t") long blockOffset,
            int count,
            @Cast("const int64_t*") long[] starts,
            @Cast("const int64_t*") long[] lengths,
            dp_status status);

    public static native int dp_segment_free_bytes(
            dp_engine engine, String name, @Cast("int64_t*") long[] out, dp_status status);

    /** {@code DP_BATCH_CRC32C}: take each task's CRC32C as its bytes move. */
    public static final int DP_BATCH_CRC32C = 1;

    public static native int dp_batch_submit_flags(
            dp_engine engine,
            int count,
            @Cast("const int32_t*") int[] opcodes,
            @Cast("const int64_t*") long[] localAddrs,
            @Cast("const int64_t*") long[] segmentIds,
            @Cast("const int64_t*") long[] offsets,
            @Cast("const int64_t*") long[] lengths,
            String notifyName,
            int flags,
            @ByPtrPtr dp_batch out,
            dp_status status);

    public static native int dp_batch_task_crc32c(
            dp_batch batch, int index, @Cast("int32_t*") int[] crcOut, dp_status status);

    public static native int dp_batch_crc_nanos(
            dp_batch batch, @Cast("int64_t*") long[] nanosOut, dp_status status);

    public static native int dp_batch_wait(
            dp_batch batch, @Cast("int64_t") long timeoutMs, dp_status status);

    public static native int dp_batch_task_status(
            dp_batch batch, int index, @Cast("int64_t*") long[] bytesOut, dp_status status);

    public static native int dp_batch_notify_status(dp_batch batch, dp_status status);

    public static native int dp_batch_cancel(
            dp_batch batch, @Cast("int64_t") long timeoutMs, dp_status status);

    public static native void dp_batch_free(dp_batch batch);

    public static native int dp_notify_register(dp_engine engine, String name, dp_status status);

    public static native int dp_notify_unregister(dp_engine engine, String name, dp_status status);

    public static native int dp_notify_get(
            dp_engine engine, String name, @Cast("int64_t*") long[] valueOut, dp_status status);

    public static native int dp_notify_wait(
            dp_engine engine,
            String name,
            @Cast("int64_t") long atLeast,
            @Cast("int64_t") long timeoutMs,
            @Cast("int64_t*") long[] valueOut,
            dp_status status);

    public static native dp_status dp_status_new();

    public static native void dp_status_delete(dp_status status);

    public static native int dp_status_code(dp_status status);

    public static native @Cast("const char*") String dp_status_message(dp_status status);

    public static native int dp_error_codes(@Cast("int32_t*") int[] codesOut, int capacity);

    public static native @Cast("const char*") String dp_error_name(int code);

    /** Address of a direct buffer's first byte (index 0, whatever its position). */
    public static long addressOf(java.nio.ByteBuffer direct) {
        return new BytePointer(direct.duplicate().clear()).address();
    }
}
