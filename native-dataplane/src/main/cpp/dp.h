/*
 * weight-relay native data plane: the C API.
 *
 * A small, stable C surface over the C++ Transfer Engine. It mirrors the shape of
 * Mooncake's transfer_engine_c.h (segments, registered memory, batched one-sided
 * transfers with per-task status) so another implementation can sit behind it.
 *
 * Conventions
 *  - Every fallible function takes a dp_status* as its last argument (the shape of TensorFlow's
 *    TF_Status) and sets it: the code (DP_OK or a negative DP_ERR_* code) and, on failure, a
 *    message naming what failed (the segment and its owner, the name, the range). It also returns
 *    the code, so a caller that only branches needs no status: NULL is allowed.
 *  - Handles are opaque and typed. A handle is owned by the caller that created it
 *    and released with the matching *_destroy / *_free function exactly once.
 *  - No function throws, aborts or crashes on bad input: bounds, unknown segments and
 *    unregistered memory are checked and reported as codes.
 *  - All functions are thread safe unless stated otherwise.
 *  - Offsets, lengths and addresses are int64_t; negative values are rejected.
 */
#ifndef WEIGHT_RELAY_DP_H_
#define WEIGHT_RELAY_DP_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. dp_error_codes() lists them, so the Java enum is checked against this table. */
#define DP_OK 0
#define DP_PENDING 1 /* task status only: not finished yet */
#define DP_ERR_INVALID_ARGUMENT (-1)
#define DP_ERR_UNKNOWN_SEGMENT (-2)
#define DP_ERR_OUT_OF_BOUNDS (-3)
#define DP_ERR_UNREGISTERED_BUFFER (-4)
#define DP_ERR_PEER_GONE (-5)
#define DP_ERR_SHORT_TRANSFER (-6)
#define DP_ERR_SEGMENT_FULL (-7)
#define DP_ERR_TIMEOUT (-8)
#define DP_ERR_IO (-9)
#define DP_ERR_EXISTS (-10)
#define DP_ERR_NOT_FOUND (-11)
#define DP_ERR_CLOSED (-12)
#define DP_ERR_INTERNAL (-13)
#define DP_ERR_DENIED (-14)        /* authentication failed, or the role may not do this */
#define DP_ERR_FOREIGN_HOST (-15)  /* same node label, other host identity: never mapped */
#define DP_ERR_PROTOCOL (-16)      /* a peer answered with a status or bytes out of protocol */
#define DP_ERR_READ_ONLY (-17)     /* a store segment refused a WRITE from role peer */
#define DP_ERR_STALE_SEGMENT (-18) /* the request named another incarnation of the segment */
#define DP_ERR_CANCELLED (-19)     /* the batch was cancelled before this chunk moved */

/* Transfer opcodes. */
#define DP_OP_READ 0  /* (segment, offset) -> local memory */
#define DP_OP_WRITE 1 /* local memory -> (segment, offset) */

/* Segment flags for dp_segment_create(). DP_SEGMENT_STORE: store capacity, a transfer
 * target that the store also allocates from (Mooncake: mounting a segment).
 * DP_SEGMENT_RECEIVE: a transfer target only, never allocated from (Mooncake:
 * registerLocalMemory). */
#define DP_SEGMENT_STORE 0
#define DP_SEGMENT_RECEIVE 1
/* Or-ed into the flags: unlink an existing file of that name first (taking a segment over from a
 * dead owner); without it an existing file is DP_ERR_EXISTS. Peers that still map the old file
 * keep their (unlinked) pages and notice, nothing is truncated under them. */
#define DP_SEGMENT_REPLACE 2

/* Roles an engine's outgoing tcp connections prove in the handshake (dp_engine_create). A peer
 * reads, writes and notifies; a remover (control-api) may also free allocations in segments it
 * does not own; a storer (a client-only publisher, owning no store memory) may also ask an owner
 * to allocate in its store segment and free there what its failed puts allocated. Only the owner
 * allocates in a segment: locally, or on a storer's request over its control channel. */
#define DP_ROLE_PEER 1
#define DP_ROLE_REMOVER 2
#define DP_ROLE_STORER 3

/* A role key as dp_engine_create takes it: one byte of DP_ROLE_*, then the 32-byte key
 * K(role) = HMAC-SHA256(deployment secret, "weight-relay dataplane v1 role key" | role), derived
 * once by the deployment's tooling (README.md, "Wire format"); engines never see the secret. */
#define DP_ROLE_KEY_BYTES 32
#define DP_ROLE_KEY_ENTRY_BYTES 33

/* Counter indexes for dp_engine_counters(). */
#define DP_COUNTER_LOCAL_READ 0
#define DP_COUNTER_LOCAL_WRITTEN 1
#define DP_COUNTER_TCP_READ 2
#define DP_COUNTER_TCP_WRITTEN 3
#define DP_COUNTER_TCP_SERVED_READ 4    /* bytes this engine's server sent to peers */
#define DP_COUNTER_TCP_SERVED_WRITTEN 5 /* bytes peers wrote into this engine */
#define DP_COUNTER_COUNT 6

typedef struct dp_engine dp_engine;
typedef struct dp_batch dp_batch;
typedef struct dp_status dp_status;

/* ---- status ---- */

/* A fresh status (DP_OK, empty message); NULL when out of memory. One status may be reused for
 * many calls, each call overwrites it; it is not shared between threads. */
dp_status* dp_status_new(void);
/* Frees the status. Safe with NULL. */
void dp_status_delete(dp_status* status);
/* The code of the last call that set it. */
int32_t dp_status_code(const dp_status* status);
/* Why the last call failed ("" after success). Valid until the status is set again or deleted. */
const char* dp_status_message(const dp_status* status);
/* Copies the status codes this library knows (DP_OK, DP_PENDING and every DP_ERR_*) into
 * codes_out (up to capacity of them) and returns how many there are. */
int32_t dp_error_codes(int32_t* codes_out, int32_t capacity);
/* Static name of a status code ("UNKNOWN_SEGMENT"; the Java enum constant). Never NULL. */
const char* dp_error_name(int32_t code);

/* ---- engine ---- */

/*
 * Creates an engine for this process. node_label and host_id decide transports: a segment whose
 * owner has the same label and the same host identity is mapped and copied (local); same label
 * with another host identity is refused (DP_ERR_FOREIGN_HOST); other labels go over tcp.
 * The tcp server binds bind_host:port (a literal IPv4/IPv6 address or a host name, resolved with
 * getaddrinfo; port 0 picks a free port). tcp_streams: connections per peer; local_threads: copy
 * threads for large local transfers; io_timeout_ms: socket send/receive timeout on both sides (a
 * stalled peer is "gone", a client that stops mid-request or mid-handshake is closed; 0 = 30 s on
 * the server); connect_timeout_ms: connecting to a peer (0 = the system's); max_connections: the
 * server's cap on open authenticated inbound connections (more are refused at once);
 * idle_timeout_ms: an authenticated connection without a request for this long is closed by the
 * server, and this engine drops its own pooled connections and stream threads after half of it
 * (0 = 60 s; clients reconnect transparently). Connections still in their handshake have a cap of
 * their own (max_connections / 4, at least 4, at most 64; when it is full the oldest is closed)
 * and an absolute deadline (5 s, or io_timeout_ms if shorter), so they never hold an
 * authenticated slot. shm_dir: the only directory segment files are created in or mapped from.
 * role_keys/role_keys_len: the role keys this engine holds, role_keys_len / DP_ROLE_KEY_ENTRY_BYTES
 * entries of DP_ROLE_KEY_ENTRY_BYTES (each role at most once). Every tcp connection proves the key
 * of its role in both directions; this engine's server accepts only the roles it holds keys of, and
 * it connects to others only when it holds the key of its own role. With no key (role_keys_len 0)
 * its server refuses every connection and it connects to nobody: only the local transport works.
 * role: DP_ROLE_* of this engine's outgoing connections.
 */
int dp_engine_create(const char* node_label, const char* host_id, const char* bind_host,
                     int32_t port, int32_t tcp_streams, int32_t local_threads,
                     int32_t io_timeout_ms, int32_t connect_timeout_ms, int32_t max_connections,
                     int32_t idle_timeout_ms, const char* shm_dir, const uint8_t* role_keys,
                     int32_t role_keys_len, int32_t role, dp_engine** out, dp_status* status);
/* Stops the server, peers and copy threads; pending and later calls fail with
 * DP_ERR_CLOSED and blocked notify waits return. Idempotent. The handle stays valid
 * until dp_engine_destroy. */
void dp_engine_shutdown(dp_engine* engine);
/* Shuts down (if not yet) and frees the engine. Stops threads, closes sockets, unmaps peers and own
 * segments. Waits for in-flight tasks to fail or finish. Safe with NULL. */
void dp_engine_destroy(dp_engine* engine);
/* The tcp port actually bound. */
int32_t dp_engine_tcp_port(dp_engine* engine);
/* Copies DP_COUNTER_COUNT byte counters into out. */
int dp_engine_counters(dp_engine* engine, int64_t* out, dp_status* status);

/* ---- own segments ---- */

/*
 * Creates a shared-memory segment backed by a new file shm_path (O_EXCL, O_NOFOLLOW; it must be
 * directly inside the engine's shm_dir; with DP_SEGMENT_REPLACE an existing file is unlinked
 * first, so peers that map it keep their pages), maps it MAP_SHARED|MAP_POPULATE and registers it
 * with the engine: it can be read and written by peers and used as local memory. flags:
 * DP_SEGMENT_STORE (it is also store capacity: dp_segment_alloc allocates from it) or
 * DP_SEGMENT_RECEIVE (a transfer target only: it has no store capacity, so every allocation in it,
 * local or asked by a peer over the control channel, fails with DP_ERR_SEGMENT_FULL and its free
 * bytes are 0; a client that does not know the flag skips it like a full segment). *base_out is its
 * address in this process, valid until dp_segment_destroy.
 */
int dp_segment_create(dp_engine* engine, const char* name, const char* shm_path, int64_t size,
                      int32_t flags, int64_t* base_out, dp_status* status);
/* The incarnation of an own segment: a random non-zero 64-bit number drawn when it was created, so
 * a segment created again under the same name has another. Its descriptor carries it, every
 * READ, WRITE, ALLOC and FREE over tcp names the incarnation it targets, and the owner refuses a
 * request for any other (DP_ERR_STALE_SEGMENT): a transfer queued against an earlier incarnation
 * never lands in the new one's bytes. DP_ERR_UNKNOWN_SEGMENT if this engine owns no such segment.
 */
int dp_segment_incarnation(dp_engine* engine, const char* name, int64_t* incarnation_out,
                           dp_status* status);
/* Gives an own DP_SEGMENT_RECEIVE segment a new incarnation (random, non-zero, not the one it had)
 * in *incarnation_out, keeping its file, mapping, registration and bytes: memory taken over by a
 * new registration of the same buffers (a loader whose engine restarted) without the kernel
 * clearing new pages. From then on the segment is fenced as if made again: tcp requests naming
 * the earlier incarnation are refused with DP_ERR_STALE_SEGMENT (a WRITE already checked finishes
 * landing before this returns), and so are transfers of engines that map the file (same host) or
 * own it, submitted with a descriptor of the earlier incarnation (the owner keeps the current one
 * in the file's sidecar, where they read it before each task). A local copy already running in
 * another process when this is called is not waited for: a renewal is only safe where the
 * earlier incarnation's writers were cancelled or will verify what they wrote, as a new
 * registration's next update rewrites and checks every byte. The caller publishes the new
 * descriptor. DP_ERR_UNKNOWN_SEGMENT if this engine owns no such segment, DP_ERR_INVALID_ARGUMENT
 * for a DP_SEGMENT_STORE segment (its allocations are objects of its incarnation), DP_ERR_IO if
 * the sidecar could not be written (the segment must then be made anew: its incarnation changed,
 * but peers mapping the file would not see it). */
int dp_segment_renew(dp_engine* engine, const char* name, int64_t* incarnation_out,
                     dp_status* status);
/* Unregisters and unmaps, releasing the file's ownership lock; unlink != 0 also removes the shm
 * file and its sidecar (unless another engine has taken the name over and they are its files by
 * now). */
int dp_segment_destroy(dp_engine* engine, const char* name, int32_t unlink_file, dp_status* status);

/*
 * Segment files and their owners: a file dp_segment_create makes holds exactly the segment's bytes
 * (a compat receive segment is byte for byte the safetensors file an engine opens). Beside it,
 * "<file>.owner" names it (device, inode, checksum), and its creator holds an exclusive flock() on
 * that sidecar while it owns the segment; the kernel drops the lock when the owner exits, SIGKILL
 * and the OOM killer included. The sidecar is made and locked before the segment file exists, and
 * removed after it; every change of which file a name points to runs under an flock() of shm_dir.
 *
 * Removes file_name (a plain name inside shm_dir) and its sidecar when the sidecar is this user's,
 * valid, names that very file and nobody holds its lock: its owner is gone, so nobody will ever
 * unlink it otherwise. DP_OK: removed, *bytes_out is its size. DP_ERR_EXISTS: its owner is alive,
 * left alone. DP_ERR_NOT_FOUND: no such file, or no valid sidecar naming it (a file some other
 * program made, an older data plane's, a staging file, a link): never touched (a dead owner's
 * sidecar left without its file is removed). Needs no engine; safe while engines of any process
 * use shm_dir.
 */
int dp_shm_reclaim(const char* shm_dir, const char* file_name, int64_t* bytes_out,
                   dp_status* status);

/* ---- local memory ---- */

/* Registers [addr, addr + length) as local memory for transfers. Regions must not
 * overlap already registered ones. */
int dp_memory_register(dp_engine* engine, int64_t addr, int64_t length, dp_status* status);
/* Unregisters the region starting at addr. */
int dp_memory_unregister(dp_engine* engine, int64_t addr, dp_status* status);

/* ---- peer segments ---- */

/*
 * Makes a segment of another (or this) engine addressable, from its descriptor
 * (as kept in the metadata store). Returns a segment id for transfers. Opening the
 * same name again returns the same id unless the descriptor changed. incarnation is the
 * descriptor's (dp_segment_incarnation of its owner; non-zero): tcp requests name it, and an owner
 * that created the segment again since refuses them with DP_ERR_STALE_SEGMENT.
 */
int dp_segment_open(dp_engine* engine, const char* name, const char* node_label,
                    const char* host_id, const char* host, int32_t port, const char* shm_path,
                    int64_t size, int64_t incarnation, int64_t* segment_id_out, dp_status* status);
/* Forgets a peer segment (for example after its owner died). */
int dp_segment_close(dp_engine* engine, int64_t segment_id, dp_status* status);
/*
 * Checks that a tcp segment's owner answers now (its control connection is open, or a new one
 * connects and authenticates within the connect timeout). DP_OK at once for segments owned by
 * this engine, and for those read through a file mapping while the file is still the segment's;
 * DP_ERR_UNKNOWN_SEGMENT for a mapping whose file its owner removed (it closed the segment or
 * created it afresh: close this one and open the segment again); DP_ERR_PEER_GONE or
 * DP_ERR_DENIED otherwise.
 */
int dp_segment_probe(dp_engine* engine, int64_t segment_id, dp_status* status);

/* ---- allocation inside a segment (by its owner) ---- */

/* Allocates length bytes in an own segment. DP_ERR_SEGMENT_FULL when no room, and always for a
 * DP_SEGMENT_RECEIVE segment. A peer's segment: its owner allocates over the control channel
 * when this engine is a DP_ROLE_STORER (same answers), else DP_ERR_DENIED. */
int dp_segment_alloc(dp_engine* engine, int64_t segment_id, int64_t length, int64_t* offset_out,
                     dp_status* status);
/* Like dp_segment_alloc in an own segment, but at the end of the highest hole that fits (rather
 * than the start of the lowest): an owner that keeps two generations at once places them at
 * alternate ends, so neither fragments the room the other leaves. DP_ERR_INVALID_ARGUMENT for a
 * peer's segment (its owner chooses where). */
int dp_segment_alloc_high(dp_engine* engine, int64_t segment_id, int64_t length,
                          int64_t* offset_out, dp_status* status);
/* Frees an allocation: locally in an own segment, over the owner's control channel otherwise,
 * which the owner allows only to a DP_ROLE_REMOVER or DP_ROLE_STORER connection (else
 * DP_ERR_DENIED). */
int dp_segment_free(dp_engine* engine, int64_t segment_id, int64_t offset, dp_status* status);
/* Turns the allocation at block_offset of an own segment into count allocations keyed by
 * starts[i] (each freed later by dp_segment_free(starts[i])) that hold at least
 * [starts[i], starts[i] + lengths[i]), and frees the rest of the block. Pieces are sorted,
 * disjoint, non-empty and inside the block; otherwise DP_ERR_INVALID_ARGUMENT and nothing
 * changes. count 0 frees the block. DP_ERR_NOT_FOUND if no allocation starts at block_offset;
 * DP_ERR_INVALID_ARGUMENT for a peer's segment (only the owner carves). Bytes written in place
 * into one reserved block become separately freeable objects this way. */
int dp_segment_carve(dp_engine* engine, int64_t segment_id, int64_t block_offset, int32_t count,
                     const int64_t* starts, const int64_t* lengths, dp_status* status);
/* Free bytes of an own segment (by name); 0 for a DP_SEGMENT_RECEIVE segment. */
int dp_segment_free_bytes(dp_engine* engine, const char* name, int64_t* out, dp_status* status);

/* ---- transfers ---- */

/*
 * Submits count one-sided transfers. Arrays are indexed by task. local_addrs must lie in
 * registered memory (an own segment or dp_memory_register); (segment_ids, offsets,
 * lengths) must lie in the segment. Invalid tasks fail individually with their code;
 * valid ones run. If notify_name is non-NULL and every task succeeds, the owner engine
 * of each distinct WRITE target segment increments the counter notify_name once, after
 * the bytes have landed.
 */
int dp_batch_submit(dp_engine* engine, int32_t count, const int32_t* opcodes,
                    const int64_t* local_addrs, const int64_t* segment_ids, const int64_t* offsets,
                    const int64_t* lengths, const char* notify_name, dp_batch** out,
                    dp_status* status);
/* Flags of dp_batch_submit_flags. DP_BATCH_CRC32C: take the CRC32C (Castagnoli) of every task's
 * bytes as they move, block by block while they are in cache (fused with the local copy, or with
 * each receive over tcp), so a reader can prove what it read without reading it again; each task's
 * chunks are summed by the thread that moves them and combined in order. */
#define DP_BATCH_CRC32C 1

/* dp_batch_submit with flags (0 or DP_BATCH_CRC32C); unknown flags: DP_ERR_INVALID_ARGUMENT. */
int dp_batch_submit_flags(dp_engine* engine, int32_t count, const int32_t* opcodes,
                          const int64_t* local_addrs, const int64_t* segment_ids,
                          const int64_t* offsets, const int64_t* lengths, const char* notify_name,
                          int32_t flags, dp_batch** out, dp_status* status);
/* The CRC32C of task index's bytes in *crc_out, once it completed (returns its status as
 * dp_batch_task_status does; *crc_out is meaningful only with DP_OK). DP_ERR_INVALID_ARGUMENT
 * unless the batch was submitted with DP_BATCH_CRC32C. */
int dp_batch_task_crc32c(dp_batch* batch, int32_t index, int32_t* crc_out, dp_status* status);
/* Nanoseconds the batch's threads spent taking CRC32C so far (summed over threads; 0 without
 * DP_BATCH_CRC32C): what the checksums cost, apart from moving the bytes. */
int dp_batch_crc_nanos(dp_batch* batch, int64_t* nanos_out, dp_status* status);
/* The CRC32C of [addr, addr + length) of this process's memory (the same code the transfers use).
 */
int dp_crc32c(int64_t addr, int64_t length, int32_t* crc_out, dp_status* status);
/* Waits (blocking, no spinning) until every task finished or timeout_ms elapsed
 * (timeout_ms < 0: forever). DP_OK or DP_ERR_TIMEOUT. */
int dp_batch_wait(dp_batch* batch, int64_t timeout_ms, dp_status* status);
/* Status of task index: DP_OK, DP_PENDING or a negative code; bytes moved in *bytes_out. */
int dp_batch_task_status(dp_batch* batch, int32_t index, int64_t* bytes_out, dp_status* status);
/* Result of the notify delivery of a finished batch (DP_OK when none was asked). */
int dp_batch_notify_status(dp_batch* batch, dp_status* status);
/* Cancels a batch that will not be waited for (its update was abandoned): chunks not yet moved
 * (queued for the copy pool or a tcp stream, or sent again after a broken connection) never move
 * and fail with DP_ERR_CANCELLED; then waits up to timeout_ms (< 0: forever) until the chunks that
 * were already moving finished. DP_OK: no byte of the batch moves any more, so its local memory
 * and its targets may be reused; DP_ERR_TIMEOUT: some chunk is still in flight (a tcp request
 * whose answer has not come within its socket timeout yet). Idempotent. */
int dp_batch_cancel(dp_batch* batch, int64_t timeout_ms, dp_status* status);
/* Releases the handle; tasks still running finish in the background. Safe with NULL. */
void dp_batch_free(dp_batch* batch);

/* ---- notify counters ---- */

/* Makes the counter name exist in this engine (at 0, or keeps its value). NOTIFY messages for a
 * name that is not registered are dropped (counted nowhere, nothing created; the writer's batch
 * still succeeds: it cannot know who listens), so peers cannot make an engine hold counters it
 * never asked for. */
int dp_notify_register(dp_engine* engine, const char* name, dp_status* status);
/* Drops the counter (an update ended); waiters on it return DP_ERR_NOT_FOUND. */
int dp_notify_unregister(dp_engine* engine, const char* name, dp_status* status);
/* Current value of the named counter in this engine; DP_ERR_NOT_FOUND if not registered. */
int dp_notify_get(dp_engine* engine, const char* name, int64_t* value_out, dp_status* status);
/* Blocks until counter >= at_least or timeout (DP_ERR_TIMEOUT); value in *value_out.
 * DP_ERR_NOT_FOUND if the name is not (or no longer) registered. */
int dp_notify_wait(dp_engine* engine, const char* name, int64_t at_least, int64_t timeout_ms,
                   int64_t* value_out, dp_status* status);

#ifdef __cplusplus
}
#endif

#endif /* WEIGHT_RELAY_DP_H_ */
