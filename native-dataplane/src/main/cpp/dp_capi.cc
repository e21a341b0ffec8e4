// The C API of dp.h over the engine: argument checks, dp_status messages, no exception escapes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "dp.h"
#include "dp_crc32c.h"
#include "dp_engine.h"

struct dp_engine {
    std::unique_ptr<dp::Engine> impl;
};

struct dp_batch {
    std::shared_ptr<dp::BatchState> state;
};

struct dp_status {
    int32_t code = DP_OK;
    std::string message;
};

namespace {

struct ErrorInfo {
    int32_t code;
    const char* name;     // the Java enum constant
    const char* meaning;  // ends every failure message
};

// The one table of status codes: dp_error_codes, dp_error_name and every message read it. Each
// DP_ERR_* is named once; its name is the Java enum constant.
#define DP_ERROR(name, meaning) \
    { DP_ERR_##name, #name, meaning }
constexpr ErrorInfo kErrors[] = {
    {DP_OK, "OK", "ok"},
    {DP_PENDING, "PENDING", "not finished yet"},
    DP_ERROR(INVALID_ARGUMENT, "invalid argument"),
    DP_ERROR(UNKNOWN_SEGMENT, "unknown segment"),
    DP_ERROR(OUT_OF_BOUNDS, "range outside the segment or registered memory"),
    DP_ERROR(UNREGISTERED_BUFFER, "local memory is not inside a registered buffer"),
    DP_ERROR(PEER_GONE, "the owner is gone (connection refused, reset or timed out)"),
    DP_ERROR(SHORT_TRANSFER, "fewer bytes moved than asked"),
    DP_ERROR(SEGMENT_FULL, "no room in the segment"),
    DP_ERROR(TIMEOUT, "timed out"),
    DP_ERROR(IO, "i/o error"),
    DP_ERROR(EXISTS, "already exists"),
    DP_ERROR(NOT_FOUND, "not found"),
    DP_ERROR(CLOSED, "the engine is shut down"),
    DP_ERROR(INTERNAL, "internal error (out of memory or threads)"),
    DP_ERROR(DENIED, "refused: the tcp handshake failed or this engine's role may not do this"),
    DP_ERROR(FOREIGN_HOST, "its node label is this engine's but its host identity is another's"),
    DP_ERROR(PROTOCOL, "the peer answered out of protocol (a reply status or bytes not accepted)"),
    DP_ERROR(READ_ONLY,
             "refused: a store segment takes no writes from role peer (peers write only into"
             " receive segments)"),
    DP_ERROR(
        STALE_SEGMENT,
        "the segment was created or renewed since its descriptor was read (another incarnation)"),
    DP_ERROR(CANCELLED, "the batch was cancelled before this transfer moved"),
};
#undef DP_ERROR

const ErrorInfo* Find(int32_t code) {
    for (const auto& e : kErrors)
        if (e.code == code) return &e;
    return nullptr;
}

// Sets status to code and returns code. On failure the message is "<what>: <meaning>", what()
// being called only then: successful calls build no strings.
template <typename What>
int Report(dp_status* status, int code, What&& what) {
    if (status == nullptr) return code;
    status->code = code;
    status->message.clear();
    if (code < 0) {
        const ErrorInfo* e = Find(code);
        status->message = what();
        status->message += ": ";
        status->message += e ? e->meaning : "unknown status code " + std::to_string(code);
    }
    return code;
}

template <typename What>
int Report(dp_status* status, dp::Err err, What&& what) {
    return Report(status, dp::Code(err), std::forward<What>(what));
}

// Sets status to DP_OK (empty message) and returns DP_OK.
int Ok(dp_status* status) {
    return Report(status, DP_OK, [] { return std::string(); });
}

// Runs body, turning any C++ exception into DP_ERR_INTERNAL: nothing unwinds into C or the JVM.
template <typename F>
int Guard(dp_status* status, F&& body) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return Report(status, DP_ERR_INTERNAL, [] { return std::string("out of memory"); });
    } catch (...) {
        return Report(status, DP_ERR_INTERNAL, [] { return std::string("unexpected failure"); });
    }
}

// The message of a call made with missing or malformed arguments.
auto Invalid(const char* function) {
    return [function] { return std::string(function) + ": missing or malformed arguments"; };
}

std::string Quoted(const char* s) { return "'" + std::string(s ? s : "") + "'"; }

// "read of 4096 bytes at offset 0 of segment 'x' (owner h:p)", with what the code needs.
std::string DescribeTask(const dp::TaskState& t, int32_t status) {
    std::string what = std::string(t.op == DP_OP_WRITE ? "write" : "read") + " of " +
                       std::to_string(t.length) + " bytes at offset " + std::to_string(t.offset) +
                       " of " + (t.target.empty() ? std::string("no segment") : t.target);
    if (status == DP_ERR_OUT_OF_BOUNDS)
        what += ", " + std::to_string(t.segment_size) + " bytes long";
    if (status == DP_ERR_UNREGISTERED_BUFFER || status == DP_ERR_OUT_OF_BOUNDS) {
        char addr[32];
        std::snprintf(addr, sizeof addr, "%#llx", static_cast<unsigned long long>(t.local_addr));
        what += ", local memory at " + std::string(addr);
    }
    if (!t.failure.empty()) what += " (" + t.failure + ")";
    return what;
}

}  // namespace

extern "C" {

dp_status* dp_status_new(void) { return new (std::nothrow) dp_status(); }

void dp_status_delete(dp_status* status) { delete status; }

int32_t dp_status_code(const dp_status* status) { return status ? status->code : DP_OK; }

const char* dp_status_message(const dp_status* status) {
    return status ? status->message.c_str() : "";
}

int32_t dp_error_codes(int32_t* codes_out, int32_t capacity) {
    int32_t n = 0;
    for (const auto& e : kErrors) {
        if (codes_out != nullptr && n < capacity) codes_out[n] = e.code;
        ++n;
    }
    return n;
}

const char* dp_error_name(int32_t code) {
    const ErrorInfo* e = Find(code);
    return e ? e->name : "UNKNOWN";
}

int dp_engine_create(const char* node_label, const char* host_id, const char* bind_host,
                     int32_t port, int32_t tcp_streams, int32_t local_threads,
                     int32_t io_timeout_ms, int32_t connect_timeout_ms, int32_t max_connections,
                     int32_t idle_timeout_ms, const char* shm_dir, const uint8_t* role_keys,
                     int32_t role_keys_len, int32_t role, dp_engine** out, dp_status* status) {
    return Guard(status, [&] {
        if (!node_label || !*node_label || !host_id || !*host_id || !bind_host || !shm_dir ||
            !out || port < 0 || port > 65535 || tcp_streams < 1 || tcp_streams > 64 ||
            local_threads < 1 || local_threads > 64 || io_timeout_ms < 0 ||
            connect_timeout_ms < 0 || max_connections < 1 || idle_timeout_ms < 0 ||
            role_keys_len < 0 || role_keys_len % DP_ROLE_KEY_ENTRY_BYTES != 0 ||
            (role_keys_len > 0 && !role_keys) ||
            (role != DP_ROLE_PEER && role != DP_ROLE_REMOVER && role != DP_ROLE_STORER))
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_engine_create"));
        *out = nullptr;
        char* real_dir = ::realpath(shm_dir, nullptr);
        if (real_dir == nullptr)
            return Report(status, DP_ERR_INVALID_ARGUMENT,
                          [&] { return "shm_dir " + Quoted(shm_dir) + " does not exist"; });
        dp::EngineOptions o;
        o.shm_dir = real_dir;
        std::free(real_dir);
        o.label = node_label;
        o.host_id = host_id;
        o.streams = tcp_streams;
        o.threads = local_threads;
        o.timeout_ms = io_timeout_ms;
        o.connect_timeout_ms = connect_timeout_ms;
        o.max_connections = max_connections;
        o.idle_timeout_ms = idle_timeout_ms;
        for (int32_t at = 0; at < role_keys_len; at += DP_ROLE_KEY_ENTRY_BYTES) {
            uint8_t key_role = role_keys[at];
            bool known = key_role == DP_ROLE_PEER || key_role == DP_ROLE_REMOVER ||
                         key_role == DP_ROLE_STORER;
            bool repeated = std::any_of(o.keys.begin(), o.keys.end(),
                                        [&](const auto& k) { return k.first == key_role; });
            if (!known || repeated)
                return Report(status, DP_ERR_INVALID_ARGUMENT, [&] {
                    return "dp_engine_create: role key " +
                           std::to_string(at / DP_ROLE_KEY_ENTRY_BYTES) + " is for " +
                           (known ? "a role given twice" : "an unknown role") + " (" +
                           std::to_string(key_role) + ")";
                });
            dp::Key key;
            std::memcpy(key.data(), role_keys + at + 1, DP_ROLE_KEY_BYTES);
            o.keys.emplace_back(key_role, key);
        }
        o.role = static_cast<uint8_t>(role);
        auto e = std::make_unique<dp_engine>();
        e->impl = std::make_unique<dp::Engine>(std::move(o));
        dp::Err err = e->impl->Start(bind_host, port);
        if (err != dp::Err::kOk)
            return Report(status, err, [&] {
                return "tcp server on " + Quoted(bind_host) + " port " + std::to_string(port) +
                       (err == dp::Err::kInvalidArgument ? " (no address or resolvable name)"
                                                         : " (cannot bind or listen)");
            });
        *out = e.release();
        return Ok(status);
    });
}

void dp_engine_shutdown(dp_engine* engine) {
    Guard(nullptr, [&] {
        if (engine) engine->impl->Shutdown();
        return DP_OK;
    });
}

void dp_engine_destroy(dp_engine* engine) {
    Guard(nullptr, [&] {
        delete engine;
        return DP_OK;
    });
}

int32_t dp_engine_tcp_port(dp_engine* engine) { return engine ? engine->impl->Port() : 0; }

int dp_engine_counters(dp_engine* engine, int64_t* out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_engine_counters"));
        for (int i = 0; i < DP_COUNTER_COUNT; ++i) out[i] = engine->impl->Counter(i);
        return Ok(status);
    });
}

int dp_segment_create(dp_engine* engine, const char* name, const char* shm_path, int64_t size,
                      int32_t flags, int64_t* base_out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !shm_path || !base_out ||
            (flags & ~(DP_SEGMENT_RECEIVE | DP_SEGMENT_REPLACE)) != 0)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_create"));
        auto what = [&] {
            return "creating segment " + Quoted(name) + " of " + std::to_string(size) +
                   " bytes in " + Quoted(shm_path);
        };
        if (engine->impl->closing()) return Report(status, DP_ERR_CLOSED, what);
        auto r =
            engine->impl->CreateSegment(name, shm_path, size, (flags & DP_SEGMENT_RECEIVE) == 0,
                                        (flags & DP_SEGMENT_REPLACE) != 0);
        if (!r.ok()) return Report(status, r.error(), what);
        *base_out = reinterpret_cast<int64_t>(r.value());
        return Ok(status);
    });
}

int dp_segment_incarnation(dp_engine* engine, const char* name, int64_t* incarnation_out,
                           dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !incarnation_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_incarnation"));
        auto seg = engine->impl->FindOwn(name);
        if (!seg)
            return Report(status, DP_ERR_UNKNOWN_SEGMENT,
                          [&] { return "own segment " + Quoted(name); });
        *incarnation_out = static_cast<int64_t>(seg->incarnation);
        return Ok(status);
    });
}

int dp_segment_renew(dp_engine* engine, const char* name, int64_t* incarnation_out,
                     dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !incarnation_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_renew"));
        auto r = engine->impl->RenewSegment(name);
        if (!r.ok())
            return Report(status, r.error(),
                          [&] { return "renewing own segment " + Quoted(name); });
        *incarnation_out = static_cast<int64_t>(r.value());
        return Ok(status);
    });
}

int dp_segment_destroy(dp_engine* engine, const char* name, int32_t unlink_file,
                       dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_destroy"));
        return Report(status, engine->impl->DestroySegment(name, unlink_file != 0),
                      [&] { return "destroying own segment " + Quoted(name); });
    });
}

int dp_shm_reclaim(const char* shm_dir, const char* file_name, int64_t* bytes_out,
                   dp_status* status) {
    return Guard(status, [&] {
        if (!shm_dir || !*shm_dir || !file_name || !bytes_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_shm_reclaim"));
        *bytes_out = 0;
        dp::Err err = dp::ReclaimOrphanedSegmentFile(shm_dir, file_name, bytes_out);
        return Report(status, err, [&] {
            std::string what = "reclaiming " + Quoted(file_name) + " in " + Quoted(shm_dir);
            if (err == dp::Err::kExists) what += " (its owner holds the lock of its sidecar)";
            if (err == dp::Err::kNotFound) what += " (no segment file with a valid sidecar)";
            return what;
        });
    });
}

int dp_memory_register(dp_engine* engine, int64_t addr, int64_t length, dp_status* status) {
    return Guard(status, [&] {
        if (!engine) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_memory_register"));
        return Report(status, engine->impl->Register(addr, length), [&] {
            return "registering " + std::to_string(length) +
                   " bytes of local memory (it overlaps"
                   " registered memory, or is empty)";
        });
    });
}

int dp_memory_unregister(dp_engine* engine, int64_t addr, dp_status* status) {
    return Guard(status, [&] {
        if (!engine)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_memory_unregister"));
        return Report(status, engine->impl->Unregister(addr),
                      [&] { return std::string("unregistering local memory"); });
    });
}

int dp_segment_open(dp_engine* engine, const char* name, const char* node_label,
                    const char* host_id, const char* host, int32_t port, const char* shm_path,
                    int64_t size, int64_t incarnation, int64_t* segment_id_out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !node_label || !host_id || !host || !shm_path || !segment_id_out ||
            incarnation == 0)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_open"));
        dp::PeerSegment desc;
        desc.name = name;
        desc.label = node_label;
        desc.host_id = host_id;
        desc.host = host;
        desc.port = port;
        desc.shm_path = shm_path;
        desc.size = size;
        desc.incarnation = static_cast<uint64_t>(incarnation);
        auto r = engine->impl->OpenSegment(desc);
        if (!r.ok())
            return Report(status, r.error(), [&] {
                return "opening segment " + Quoted(name) + " of node label " + Quoted(node_label) +
                       " on host " + Quoted(host_id) + " at " + std::string(host) + ":" +
                       std::to_string(port) + " (file " + Quoted(shm_path) + ")";
            });
        *segment_id_out = r.value();
        return Ok(status);
    });
}

int dp_segment_probe(dp_engine* engine, int64_t segment_id, dp_status* status) {
    return Guard(status, [&] {
        if (!engine) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_probe"));
        return Report(status, engine->impl->Probe(segment_id), [&] {
            return "probing the owner of " + engine->impl->DescribeSegment(segment_id);
        });
    });
}

int dp_segment_close(dp_engine* engine, int64_t segment_id, dp_status* status) {
    return Guard(status, [&] {
        if (!engine) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_close"));
        return Report(status, engine->impl->CloseSegment(segment_id),
                      [&] { return "closing " + engine->impl->DescribeSegment(segment_id); });
    });
}

int dp_segment_alloc(dp_engine* engine, int64_t segment_id, int64_t length, int64_t* offset_out,
                     dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !offset_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_alloc"));
        auto r = engine->impl->Alloc(segment_id, length);
        if (!r.ok())
            return Report(status, r.error(), [&] {
                return "allocating " + std::to_string(length) + " bytes in " +
                       engine->impl->DescribeSegment(segment_id);
            });
        *offset_out = r.value();
        return Ok(status);
    });
}

int dp_segment_alloc_high(dp_engine* engine, int64_t segment_id, int64_t length,
                          int64_t* offset_out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !offset_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_alloc_high"));
        auto r = engine->impl->Alloc(segment_id, length, true);
        if (!r.ok())
            return Report(status, r.error(), [&] {
                return "allocating " + std::to_string(length) + " bytes at the high end of " +
                       engine->impl->DescribeSegment(segment_id);
            });
        *offset_out = r.value();
        return Ok(status);
    });
}

int dp_segment_free(dp_engine* engine, int64_t segment_id, int64_t offset, dp_status* status) {
    return Guard(status, [&] {
        if (!engine) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_free"));
        return Report(status, engine->impl->Free(segment_id, offset), [&] {
            return "freeing the allocation at offset " + std::to_string(offset) + " of " +
                   engine->impl->DescribeSegment(segment_id);
        });
    });
}

int dp_segment_carve(dp_engine* engine, int64_t segment_id, int64_t block_offset, int32_t count,
                     const int64_t* starts, const int64_t* lengths, dp_status* status) {
    return Guard(status, [&] {
        if (!engine) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_carve"));
        return Report(status, engine->impl->Carve(segment_id, block_offset, count, starts, lengths),
                      [&] {
                          return "carving the block at offset " + std::to_string(block_offset) +
                                 " of " + engine->impl->DescribeSegment(segment_id) + " into " +
                                 std::to_string(count) + " pieces";
                      });
    });
}

int dp_segment_free_bytes(dp_engine* engine, const char* name, int64_t* out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_free_bytes"));
        auto seg = engine->impl->FindOwn(name);
        if (!seg)
            return Report(status, DP_ERR_UNKNOWN_SEGMENT,
                          [&] { return "free bytes of own segment " + Quoted(name); });
        *out = seg->allocator->FreeBytes();
        return Ok(status);
    });
}

int dp_batch_submit(dp_engine* engine, int32_t count, const int32_t* opcodes,
                    const int64_t* local_addrs, const int64_t* segment_ids, const int64_t* offsets,
                    const int64_t* lengths, const char* notify_name, dp_batch** out,
                    dp_status* status) {
    return dp_batch_submit_flags(engine, count, opcodes, local_addrs, segment_ids, offsets, lengths,
                                 notify_name, 0, out, status);
}

int dp_batch_submit_flags(dp_engine* engine, int32_t count, const int32_t* opcodes,
                          const int64_t* local_addrs, const int64_t* segment_ids,
                          const int64_t* offsets, const int64_t* lengths, const char* notify_name,
                          int32_t flags, dp_batch** out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_batch_submit"));
        *out = nullptr;
        auto batch = std::make_unique<dp_batch>();
        auto r = engine->impl->Submit(count, opcodes, local_addrs, segment_ids, offsets, lengths,
                                      notify_name, flags);
        if (!r.ok())
            return Report(status, r.error(), [&] {
                return "submitting a batch of " + std::to_string(count) + " tasks (flags " +
                       std::to_string(flags) + ", notify " +
                       (notify_name ? Quoted(notify_name) : std::string("none")) + ")";
            });
        batch->state = r.value();
        *out = batch.release();
        return Ok(status);
    });
}

int dp_batch_wait(dp_batch* batch, int64_t timeout_ms, dp_status* status) {
    return Guard(status, [&] {
        if (!batch) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_batch_wait"));
        dp::HelpCopy(batch->state);
        auto& s = *batch->state;
        std::unique_lock<std::mutex> lock(s.mu);
        bool done = true;
        if (timeout_ms < 0) {
            s.cv.wait(lock, [&] { return s.done; });
        } else {
            done =
                s.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return s.done; });
        }
        return Report(status, done ? DP_OK : DP_ERR_TIMEOUT, [&] {
            return "a batch of " + std::to_string(s.count) + " tasks, " +
                   std::to_string(s.remaining) + " unfinished after " + std::to_string(timeout_ms) +
                   " ms";
        });
    });
}

int dp_batch_task_status(dp_batch* batch, int32_t index, int64_t* bytes_out, dp_status* status) {
    return Guard(status, [&] {
        if (!batch || !bytes_out || index < 0 || index >= batch->state->count)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_batch_task_status"));
        auto& s = *batch->state;
        std::lock_guard<std::mutex> lock(s.mu);
        const dp::TaskState& t = s.tasks[index];
        *bytes_out = t.bytes.load();
        return Report(status, t.final_status, [&] { return DescribeTask(t, t.final_status); });
    });
}

int dp_batch_task_crc32c(dp_batch* batch, int32_t index, int32_t* crc_out, dp_status* status) {
    return Guard(status, [&] {
        if (!batch || !crc_out || index < 0 || index >= batch->state->count)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_batch_task_crc32c"));
        auto& s = *batch->state;
        if (!s.crc)
            return Report(status, DP_ERR_INVALID_ARGUMENT, [] {
                return std::string("the batch was not submitted with DP_BATCH_CRC32C");
            });
        std::lock_guard<std::mutex> lock(s.mu);
        const dp::TaskState& t = s.tasks[index];
        *crc_out = static_cast<int32_t>(t.crc);
        return Report(status, t.final_status, [&] { return DescribeTask(t, t.final_status); });
    });
}

int dp_batch_crc_nanos(dp_batch* batch, int64_t* nanos_out, dp_status* status) {
    return Guard(status, [&] {
        if (!batch || !nanos_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_batch_crc_nanos"));
        *nanos_out = batch->state->crc_nanos.load();
        return Ok(status);
    });
}

int dp_crc32c(int64_t addr, int64_t length, int32_t* crc_out, dp_status* status) {
    return Guard(status, [&] {
        if (!crc_out || length < 0 || (length > 0 && addr == 0))
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_crc32c"));
        *crc_out =
            static_cast<int32_t>(dp::Crc32cUpdate(0, reinterpret_cast<const void*>(addr), length));
        return Ok(status);
    });
}

int dp_batch_notify_status(dp_batch* batch, dp_status* status) {
    return Guard(status, [&] {
        if (!batch)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_batch_notify_status"));
        auto& s = *batch->state;
        std::lock_guard<std::mutex> lock(s.mu);
        return Report(status, s.done ? s.notify_status : DP_PENDING, [&] {
            return "notify " + Quoted(s.notify_name.c_str()) + " to the owner at " +
                   (s.notify_failed.empty() ? std::string("?") : s.notify_failed);
        });
    });
}

int dp_batch_cancel(dp_batch* batch, int64_t timeout_ms, dp_status* status) {
    return Guard(status, [&] {
        if (!batch) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_batch_cancel"));
        auto& s = *batch->state;
        if (s.engine != nullptr) s.engine->CancelBatch(batch->state);
        std::unique_lock<std::mutex> lock(s.mu);
        bool done = true;
        if (timeout_ms < 0) {
            s.cv.wait(lock, [&] { return s.done; });
        } else {
            done =
                s.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return s.done; });
        }
        return Report(status, done ? DP_OK : DP_ERR_TIMEOUT, [&] {
            return "cancelling a batch of " + std::to_string(s.count) +
                   " tasks: " + std::to_string(s.remaining) + " still moving after " +
                   std::to_string(timeout_ms) + " ms";
        });
    });
}

void dp_batch_free(dp_batch* batch) {
    Guard(nullptr, [&] {
        delete batch;
        return DP_OK;
    });
}

int dp_notify_register(dp_engine* engine, const char* name, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !*name || std::strlen(name) > dp::kMaxName)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_notify_register"));
        engine->impl->RegisterNotify(name);
        return Ok(status);
    });
}

int dp_notify_unregister(dp_engine* engine, const char* name, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_notify_unregister"));
        return Report(status, engine->impl->UnregisterNotify(name),
                      [&] { return "notify counter " + Quoted(name); });
    });
}

int dp_notify_get(dp_engine* engine, const char* name, int64_t* value_out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !value_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_notify_get"));
        auto r = engine->impl->NotifyValue(name);
        if (!r.ok())
            return Report(status, r.error(), [&] { return "notify counter " + Quoted(name); });
        *value_out = r.value();
        return Ok(status);
    });
}

int dp_notify_wait(dp_engine* engine, const char* name, int64_t at_least, int64_t timeout_ms,
                   int64_t* value_out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !value_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_notify_wait"));
        return Report(status, engine->impl->WaitNotify(name, at_least, timeout_ms, value_out), [&] {
            return "waiting " + std::to_string(timeout_ms) + " ms for notify counter " +
                   Quoted(name) + " to reach " + std::to_string(at_least) + " (it is at " +
                   std::to_string(*value_out) + ")";
        });
    });
}

}  // extern "C"
