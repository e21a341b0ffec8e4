// Test driver for the C API, meant for sanitizer and valgrind runs (see README.md).
// Two engines in one process: "node-a" owns segments, "node-b" reaches them over tcp and
// a second "node-a" engine reaches them through the local transport.
#include "dp.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dp_bench.h"
#include "dp_crypto.h"
#include "dp_local_copy.h"
#include "dp_wire.h"

namespace {

int failures = 0;

#define CHECK_EQ(actual, expected)                                                         \
    do {                                                                                   \
        long long a_ = static_cast<long long>(actual);                                     \
        long long e_ = static_cast<long long>(expected);                                   \
        if (a_ != e_) {                                                                    \
            std::fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, \
                         #actual, a_, e_);                                                 \
            ++failures;                                                                    \
        }                                                                                  \
    } while (0)

const uint8_t kSecret[] = "dp-test deployment secret";
const char kHost[] = "test-host-1";

// The role keys of roles derived from secret, as dp_engine_create takes them (what a deployment's
// tooling hands an engine).
std::vector<uint8_t> RoleKeys(const uint8_t* secret, int32_t secret_len,
                              std::initializer_list<uint8_t> roles = {DP_ROLE_PEER, DP_ROLE_REMOVER,
                                                                      DP_ROLE_STORER}) {
    std::vector<uint8_t> out;
    if (secret_len == 0) return out;
    std::vector<uint8_t> s(secret, secret + secret_len);
    for (uint8_t role : roles) {
        dp::Key k = dp::RoleKey(s, role);
        out.push_back(role);
        out.insert(out.end(), k.begin(), k.end());
    }
    return out;
}
const std::vector<uint8_t> kKeys = RoleKeys(kSecret, sizeof kSecret - 1);
const int32_t kKeysLen = static_cast<int32_t>(kKeys.size());

// Every test engine is made here: one secret, one host identity, unless a test says otherwise.
dp_engine* Create(const char* label, int32_t role = DP_ROLE_PEER, const uint8_t* secret = kSecret,
                  int32_t secret_len = sizeof kSecret - 1, const char* host_id = kHost,
                  int32_t max_connections = 64, int32_t io_timeout_ms = 10000,
                  int32_t idle_timeout_ms = 0) {
    dp_engine* e = nullptr;
    std::vector<uint8_t> keys = RoleKeys(secret, secret_len);
    CHECK_EQ(dp_engine_create(label, host_id, "127.0.0.1", 0, 2, 2, io_timeout_ms, 2000,
                              max_connections, idle_timeout_ms, "/dev/shm", keys.data(),
                              static_cast<int32_t>(keys.size()), role, &e, nullptr),
             DP_OK);
    return e;
}

// An engine of the test deployment with these limits.
dp_engine* CreateLimited(const char* label, int32_t max_connections, int32_t io_timeout_ms,
                         int32_t idle_timeout_ms, int32_t role = DP_ROLE_PEER) {
    return Create(label, role, kSecret, sizeof kSecret - 1, kHost, max_connections, io_timeout_ms,
                  idle_timeout_ms);
}

int64_t Open(dp_engine* e, const char* name, const char* owner_label, dp_engine* owner,
             const std::string& shm, int64_t size, int expected = DP_OK,
             const char* host_id = kHost) {
    int64_t seg = -1;
    int64_t incarnation = 1;  // a segment the owner does not have: any non-zero one
    dp_segment_incarnation(owner, name, &incarnation, nullptr);
    CHECK_EQ(dp_segment_open(e, name, owner_label, host_id, "127.0.0.1", dp_engine_tcp_port(owner),
                             shm.c_str(), size, incarnation, &seg, nullptr),
             expected);
    return seg;
}

struct Batch {
    std::vector<int32_t> ops;
    std::vector<int64_t> addrs, segs, offsets, lengths;
    void Add(int32_t op, const void* addr, int64_t seg, int64_t offset, int64_t length) {
        ops.push_back(op);
        addrs.push_back(reinterpret_cast<int64_t>(addr));
        segs.push_back(seg);
        offsets.push_back(offset);
        lengths.push_back(length);
    }
    // Submits, waits and returns the statuses.
    std::vector<int> Run(dp_engine* e, const char* notify = nullptr, int notify_status = DP_OK) {
        dp_batch* b = nullptr;
        std::vector<int> statuses;
        int rc = dp_batch_submit(e, static_cast<int32_t>(ops.size()), ops.data(), addrs.data(),
                                 segs.data(), offsets.data(), lengths.data(), notify, &b, nullptr);
        CHECK_EQ(rc, DP_OK);
        if (rc != DP_OK) return statuses;
        CHECK_EQ(dp_batch_wait(b, -1, nullptr), DP_OK);
        for (size_t i = 0; i < ops.size(); ++i) {
            int64_t bytes = 0;
            int st = dp_batch_task_status(b, static_cast<int32_t>(i), &bytes, nullptr);
            if (st == DP_OK) CHECK_EQ(bytes, lengths[i]);
            statuses.push_back(st);
        }
        CHECK_EQ(dp_batch_notify_status(b, nullptr), notify_status);
        dp_batch_free(b);
        return statuses;
    }
};

bool Contains(const char* haystack, const char* needle) {
    return std::strstr(haystack, needle) != nullptr;
}

// A failed call says why in its dp_status: the code it returned and a message naming the
// segment, its owner, the range; success clears the message.
void StatusNamesWhatFailed(dp_engine* owner, dp_engine* client, const std::string& shm,
                           int64_t size) {
    dp_status* st = dp_status_new();
    int64_t off = 0;
    CHECK_EQ(dp_segment_alloc(client, 987654, 64, &off, st), DP_ERR_UNKNOWN_SEGMENT);
    CHECK_EQ(dp_status_code(st), DP_ERR_UNKNOWN_SEGMENT);
    CHECK_EQ(Contains(dp_status_message(st), "segment id 987654"), true);
    int64_t seg = Open(client, "seg-a", "node-a", owner, shm, size);
    CHECK_EQ(dp_segment_alloc(client, seg, 64, &off, st), DP_ERR_DENIED);
    CHECK_EQ(Contains(dp_status_message(st), "'seg-a'"), true);
    CHECK_EQ(Contains(dp_status_message(st), "127.0.0.1:"), true);
    std::vector<char> buf(4096);
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(buf.data()), 4096, st), DP_OK);
    CHECK_EQ(dp_status_code(st), DP_OK);
    CHECK_EQ(std::strlen(dp_status_message(st)), 0);
    int32_t op = DP_OP_READ;
    int64_t addr = reinterpret_cast<int64_t>(buf.data()), at = size - 16, len = 4096;
    dp_batch* b = nullptr;
    CHECK_EQ(dp_batch_submit(client, 1, &op, &addr, &seg, &at, &len, nullptr, &b, st), DP_OK);
    CHECK_EQ(dp_batch_wait(b, -1, st), DP_OK);
    int64_t bytes = 0;
    CHECK_EQ(dp_batch_task_status(b, 0, &bytes, st), DP_ERR_OUT_OF_BOUNDS);
    CHECK_EQ(Contains(dp_status_message(st), "read of 4096 bytes"), true);
    CHECK_EQ(Contains(dp_status_message(st), std::to_string(size).c_str()), true);
    dp_batch_free(b);
    CHECK_EQ(dp_memory_unregister(client, addr, st), DP_OK);
    CHECK_EQ(dp_segment_close(client, seg, st), DP_OK);
    // The table the Java enum is checked against names every code it returns.
    int32_t codes[64];
    int32_t n = dp_error_codes(codes, 64);
    CHECK_EQ(n > 16 && n <= 64, true);
    for (int32_t i = 0; i < n; ++i)
        CHECK_EQ(std::strcmp(dp_error_name(codes[i]), "UNKNOWN") != 0, true);
    dp_status_delete(st);
    dp_status_delete(nullptr);
}

void Fill(char* p, int64_t n, int seed) {
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<char>((i * 31 + seed) & 0xff);
}

// tcp_peer: client reaches the owner over tcp as a peer, so the owner refuses its writes into the
// store segment (READ_ONLY) and the remover (a role that may write there) writes the bytes instead.
void RunTransport(dp_engine* owner, dp_engine* client, dp_engine* remover,
                  const std::string& owner_label, const std::string& shm, int64_t size,
                  const char* notify, bool tcp_peer) {
    int64_t seg = Open(client, "seg-a", owner_label.c_str(), owner, shm, size);
    CHECK_EQ(dp_notify_register(owner, notify, nullptr), DP_OK);
    std::vector<char> buf(static_cast<size_t>(size));
    Fill(buf.data(), size, 7);
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
             DP_OK);

    dp_engine* writer = client;
    int64_t writers_seg = seg;
    if (tcp_peer) {
        Batch refused;
        refused.Add(DP_OP_WRITE, buf.data(), seg, 0, 4096);
        for (int st : refused.Run(client)) CHECK_EQ(st, DP_ERR_READ_ONLY);
        writer = remover;
        writers_seg = Open(remover, "seg-a", owner_label.c_str(), owner, shm, size);
        CHECK_EQ(dp_memory_register(remover, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
                 DP_OK);
    }
    Batch write;
    write.Add(DP_OP_WRITE, buf.data(), writers_seg, 0, size / 2);
    write.Add(DP_OP_WRITE, buf.data() + size / 2, writers_seg, size / 2, size / 2);
    for (int st : write.Run(writer, notify)) CHECK_EQ(st, DP_OK);
    if (tcp_peer)
        CHECK_EQ(dp_memory_unregister(remover, reinterpret_cast<int64_t>(buf.data()), nullptr),
                 DP_OK);
    if (notify != nullptr) {
        int64_t value = 0;
        CHECK_EQ(dp_notify_wait(owner, notify, 1, 5000, &value, nullptr), DP_OK);
        CHECK_EQ(value, 1);
    }

    std::vector<char> back(static_cast<size_t>(size));
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(back.data()), size, nullptr),
             DP_OK);
    Batch read;
    read.Add(DP_OP_READ, back.data(), seg, 0, size);
    read.Add(DP_OP_READ, back.data(), seg, size - 10, 20);  // out of bounds
    read.Add(DP_OP_READ, back.data(), 9999, 0, 10);         // unknown segment
    read.Add(DP_OP_READ, buf.data() + size, seg, 0, 10);    // unregistered local memory
    read.Add(DP_OP_READ, back.data(), seg, size, 0);        // empty range at the edge
    auto st = read.Run(client);
    CHECK_EQ(st[0], DP_OK);
    CHECK_EQ(st[1], DP_ERR_OUT_OF_BOUNDS);
    CHECK_EQ(st[2], DP_ERR_UNKNOWN_SEGMENT);
    CHECK_EQ(st[3], DP_ERR_UNREGISTERED_BUFFER);
    CHECK_EQ(st[4], DP_OK);
    CHECK_EQ(std::memcmp(buf.data(), back.data(), static_cast<size_t>(size)), 0);

    // Only the owner allocates; only the owner or a remover frees.
    int64_t own_seg = Open(owner, "seg-a", owner_label.c_str(), owner, shm, size);
    int64_t off1 = -1, off2 = -1, off3 = -1;
    CHECK_EQ(dp_segment_alloc(client, seg, 64, &off3, nullptr), DP_ERR_DENIED);
    CHECK_EQ(dp_segment_alloc(owner, own_seg, size / 2, &off1, nullptr), DP_OK);
    CHECK_EQ(dp_segment_alloc(owner, own_seg, size / 2, &off2, nullptr), DP_OK);
    CHECK_EQ(dp_segment_alloc(owner, own_seg, 64, &off3, nullptr), DP_ERR_SEGMENT_FULL);
    CHECK_EQ(dp_segment_free(client, seg, off1, nullptr), DP_ERR_DENIED);
    int64_t removers_seg = Open(remover, "seg-a", owner_label.c_str(), owner, shm, size);
    CHECK_EQ(dp_segment_free(remover, removers_seg, off1, nullptr), DP_OK);
    CHECK_EQ(dp_segment_free(remover, removers_seg, off1, nullptr), DP_ERR_NOT_FOUND);
    CHECK_EQ(dp_segment_free(owner, own_seg, off2, nullptr), DP_OK);
    CHECK_EQ(dp_segment_close(remover, removers_seg, nullptr), DP_OK);
    CHECK_EQ(dp_notify_unregister(owner, notify, nullptr), DP_OK);
    int64_t gone = 0;
    CHECK_EQ(dp_notify_get(owner, notify, &gone, nullptr), DP_ERR_NOT_FOUND);

    CHECK_EQ(dp_memory_unregister(client, reinterpret_cast<int64_t>(buf.data()), nullptr), DP_OK);
    CHECK_EQ(dp_memory_unregister(client, reinterpret_cast<int64_t>(back.data()), nullptr), DP_OK);
    CHECK_EQ(dp_segment_close(client, seg, nullptr), DP_OK);
}

// Batches submitted while another thread shuts the engine down all finish (OK or CLOSED),
// none hangs, and the engine frees cleanly.
void ShutdownWhileSubmitting(const std::string& shm_base) {
    const int64_t size = 16 << 20;
    std::string shm = shm_base + "-race";
    dp_engine* e = Create("node-r");
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(e, "race", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
             DP_OK);
    int64_t seg = Open(e, "race", "node-r", e, shm, size);
    std::vector<char> buf(static_cast<size_t>(size));
    CHECK_EQ(dp_memory_register(e, reinterpret_cast<int64_t>(buf.data()), size, nullptr), DP_OK);
    int bad = 0;
    std::thread submitter([&] {
        for (int i = 0; i < 200; ++i) {
            int32_t op = DP_OP_WRITE;
            int64_t addr = reinterpret_cast<int64_t>(buf.data()), off = 0, len = size;
            dp_batch* b = nullptr;
            int rc = dp_batch_submit(e, 1, &op, &addr, &seg, &off, &len, nullptr, &b, nullptr);
            if (rc == DP_ERR_CLOSED) break;
            if (rc != DP_OK || dp_batch_wait(b, 60000, nullptr) != DP_OK) ++bad;
            int64_t bytes = 0;
            int st = dp_batch_task_status(b, 0, &bytes, nullptr);
            if (st != DP_OK && st != DP_ERR_CLOSED) ++bad;
            dp_batch_free(b);
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    dp_engine_shutdown(e);
    submitter.join();
    CHECK_EQ(bad, 0);
    dp_engine_destroy(e);
    ::unlink(shm.c_str());
}

// A receive segment (DP_SEGMENT_RECEIVE) is a transfer target, never store capacity: its
// owner refuses every allocation, asked locally or by a peer over tcp or the local transport
// (a client that does not know the flag), while one-sided writes into it still land.
void ReceiveSegmentIsNeverAllocated(dp_engine* owner, dp_engine* tcp_client,
                                    dp_engine* local_client, const std::string& shm_base) {
    const int64_t size = 1 << 20;
    std::string shm = shm_base + "-recv";
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(owner, "recv", shm.c_str(), size, 7, &base, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(
        dp_segment_create(owner, "recv", shm.c_str(), size, DP_SEGMENT_RECEIVE, &base, nullptr),
        DP_OK);
    CHECK_EQ(dp_notify_register(owner, "recv-landed", nullptr), DP_OK);
    int64_t free_bytes = -1;
    CHECK_EQ(dp_segment_free_bytes(owner, "recv", &free_bytes, nullptr), DP_OK);
    CHECK_EQ(free_bytes, 0);
    std::vector<char> buf(static_cast<size_t>(size));
    Fill(buf.data(), size, 3);
    dp_engine* engines[] = {owner, tcp_client, local_client};
    for (dp_engine* e : engines) {
        int64_t off = -1;
        int64_t seg = Open(e, "recv", "node-a", owner, shm, size);
        CHECK_EQ(dp_segment_alloc(e, seg, 64, &off, nullptr),
                 e == owner ? DP_ERR_SEGMENT_FULL : DP_ERR_DENIED);
        CHECK_EQ(off, -1);
        CHECK_EQ(dp_memory_register(e, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
                 DP_OK);
        Batch write;
        write.Add(DP_OP_WRITE, buf.data(), seg, 0, size);
        for (int st : write.Run(e, "recv-landed")) CHECK_EQ(st, DP_OK);
        CHECK_EQ(
            std::memcmp(reinterpret_cast<const char*>(base), buf.data(), static_cast<size_t>(size)),
            0);
        CHECK_EQ(dp_memory_unregister(e, reinterpret_cast<int64_t>(buf.data()), nullptr), DP_OK);
        if (e != owner) CHECK_EQ(dp_segment_close(e, seg, nullptr), DP_OK);
    }
    int64_t value = 0;
    CHECK_EQ(dp_notify_get(owner, "recv-landed", &value, nullptr), DP_OK);
    CHECK_EQ(value, 3);
    CHECK_EQ(dp_notify_unregister(owner, "recv-landed", nullptr), DP_OK);
    CHECK_EQ(dp_segment_destroy(owner, "recv", 1, nullptr), DP_OK);
}

// Carving: bytes written in place into one allocated block become separately freeable
// pieces, the gaps between them go back to the free list, and nothing leaks: once every piece is
// freed, the whole segment is one hole again.
void CarveKeepsPiecesAndFreesTheRest(dp_engine* owner, dp_engine* peer,
                                     const std::string& shm_base) {
    const int64_t size = 64 << 10;
    std::string shm = shm_base + "-carve";
    int64_t base = 0, block = -1, free_bytes = -1;
    CHECK_EQ(dp_segment_create(owner, "carve", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
             DP_OK);
    int64_t seg = Open(owner, "carve", "node-a", owner, shm, size);
    CHECK_EQ(dp_segment_alloc(owner, seg, 4096, &block, nullptr), DP_OK);
    CHECK_EQ(block, 0);
    const int64_t starts[] = {10, 200, 3000};
    const int64_t lengths[] = {100, 1000, 64};
    const int64_t overlapping[] = {10, 100, 3000};
    CHECK_EQ(dp_segment_carve(owner, seg, block, 3, overlapping, lengths, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    const int64_t outside[] = {4090};
    CHECK_EQ(dp_segment_carve(owner, seg, block, 1, outside, lengths, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_carve(owner, seg, 64, 3, starts, lengths, nullptr), DP_ERR_NOT_FOUND);
    int64_t peer_seg = Open(peer, "carve", "node-a", owner, shm, size);
    CHECK_EQ(dp_segment_carve(peer, peer_seg, block, 3, starts, lengths, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_close(peer, peer_seg, nullptr), DP_OK);
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes, nullptr), DP_OK);
    CHECK_EQ(free_bytes, size - 4096);  // refused carves changed nothing

    CHECK_EQ(dp_segment_carve(owner, seg, block, 3, starts, lengths, nullptr), DP_OK);
    // Extents: [0,128) [192,1216) [2944,3072); the aligned gaps between them are free.
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes, nullptr), DP_OK);
    CHECK_EQ(free_bytes, size - 1280);
    CHECK_EQ(dp_segment_free(owner, seg, block, nullptr), DP_ERR_NOT_FOUND);  // the block is gone
    int64_t hole = -1;
    CHECK_EQ(dp_segment_alloc(owner, seg, 64, &hole, nullptr), DP_OK);  // first fit: the gap at 128
    CHECK_EQ(hole, 128);
    CHECK_EQ(dp_segment_free(owner, seg, hole, nullptr), DP_OK);
    for (int64_t key : starts) CHECK_EQ(dp_segment_free(owner, seg, key, nullptr), DP_OK);
    CHECK_EQ(dp_segment_free(owner, seg, 200, nullptr), DP_ERR_NOT_FOUND);
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes, nullptr), DP_OK);
    CHECK_EQ(free_bytes, size);
    int64_t whole = -1;
    CHECK_EQ(dp_segment_alloc(owner, seg, size, &whole, nullptr), DP_OK);  // one hole again
    CHECK_EQ(dp_segment_carve(owner, seg, whole, 0, nullptr, nullptr, nullptr),
             DP_OK);  // frees it all
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes, nullptr), DP_OK);
    CHECK_EQ(free_bytes, size);
    CHECK_EQ(dp_segment_destroy(owner, "carve", 1, nullptr), DP_OK);
}

// Publishes `generations` generations into seg, each two 16 KiB blocks carved into two objects
// with an aligned gap between them, the one before collected once the next is in (as a store
// segment holds the active generation while the next is published). Generation g is allocated
// high when `alternate` and g is odd, else low. Returns the first generation that found no room
// for a block (-1: none), having freed everything.
int PublishGenerations(dp_engine* owner, int64_t seg, bool alternate, int generations) {
    const int64_t block_bytes = 16 << 10;
    std::vector<int64_t> live[2];
    int failed = -1;
    for (int g = 0; g < generations && failed < 0; ++g) {
        std::vector<int64_t>& mine = live[g % 2];
        for (int b = 0; b < 2; ++b) {
            int64_t block = -1;
            int rc = alternate && g % 2 == 1
                         ? dp_segment_alloc_high(owner, seg, block_bytes, &block, nullptr)
                         : dp_segment_alloc(owner, seg, block_bytes, &block, nullptr);
            if (rc == DP_ERR_SEGMENT_FULL) {
                failed = g;
                break;
            }
            CHECK_EQ(rc, DP_OK);
            const int64_t starts[] = {block, block + 8192};
            const int64_t lengths[] = {3000 + g, 5000 - g};
            CHECK_EQ(dp_segment_carve(owner, seg, block, 2, starts, lengths, nullptr), DP_OK);
            mine.push_back(starts[0]);
            mine.push_back(starts[1]);
        }
        if (g > 0) {
            std::vector<int64_t>& before = live[(g + 1) % 2];
            for (int64_t key : before) CHECK_EQ(dp_segment_free(owner, seg, key, nullptr), DP_OK);
            before.clear();
        }
    }
    for (auto& objects : live)
        for (int64_t key : objects) CHECK_EQ(dp_segment_free(owner, seg, key, nullptr), DP_OK);
    return failed;
}

// High allocations take the end of the highest hole, low ones the start of the lowest. With two
// generations alive, first fit alone scatters the next generation's blocks among the active
// one's objects until a block finds no contiguous room although a third of the segment is free;
// generations at alternate ends never do, and leave the segment one hole.
void AlternateEndsKeepGenerationsApart(dp_engine* owner, dp_engine* peer,
                                       const std::string& shm_base) {
    const int64_t size = 64 << 10;
    std::string shm = shm_base + "-ends";
    int64_t base = 0, free_bytes = -1;
    CHECK_EQ(dp_segment_create(owner, "ends", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
             DP_OK);
    int64_t seg = Open(owner, "ends", "node-a", owner, shm, size);
    int64_t peer_seg = Open(peer, "ends", "node-a", owner, shm, size);
    int64_t off = -1;
    CHECK_EQ(dp_segment_alloc_high(peer, peer_seg, 64, &off, nullptr), DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_close(peer, peer_seg, nullptr), DP_OK);
    CHECK_EQ(dp_segment_alloc_high(owner, seg, 0, &off, nullptr), DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_alloc_high(owner, seg, 100, &off, nullptr), DP_OK);
    CHECK_EQ(off, size - 128);  // 100 rounded up to the alignment, at the very end
    CHECK_EQ(dp_segment_free(owner, seg, off, nullptr), DP_OK);

    CHECK_EQ(PublishGenerations(owner, seg, false, 60), 2);
    CHECK_EQ(PublishGenerations(owner, seg, true, 60), -1);
    CHECK_EQ(dp_segment_free_bytes(owner, "ends", &free_bytes, nullptr), DP_OK);
    CHECK_EQ(free_bytes, size);
    int64_t whole = -1;
    CHECK_EQ(dp_segment_alloc_high(owner, seg, size, &whole, nullptr), DP_OK);  // one hole again
    CHECK_EQ(whole, 0);
    CHECK_EQ(dp_segment_free(owner, seg, whole, nullptr), DP_OK);
    CHECK_EQ(dp_segment_destroy(owner, "ends", 1, nullptr), DP_OK);
}

std::string Hex(const uint8_t* p, size_t n) {
    std::string out;
    char buf[3];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(buf, sizeof buf, "%02x", p[i]);
        out += buf;
    }
    return out;
}

void CheckHmac(const std::string& key, const std::string& data, const char* expected) {
    dp::HmacSha256 h(key.data(), key.size());
    h.Update(data.data(), data.size());
    uint8_t mac[32];
    h.Final(mac);
    std::string got = Hex(mac, sizeof mac);
    if (got != expected) {
        std::fprintf(stderr, "HMAC-SHA256 mismatch: %s, expected %s\n", got.c_str(), expected);
        ++failures;
    }
}

// SHA-256 (FIPS 180-4 examples) and HMAC-SHA256 (RFC 4231 test cases 1-4, 6 and 7).
void CryptoMatchesTheStandards() {
    uint8_t digest[32];
    dp::Sha256 empty;
    empty.Final(digest);
    CHECK_EQ(Hex(digest, 32) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
             1);
    dp::Sha256 abc;
    abc.Update("abc", 3);
    abc.Final(digest);
    CHECK_EQ(Hex(digest, 32) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
             1);
    CheckHmac(std::string(20, '\x0b'), "Hi There",
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CheckHmac("Jefe", "what do ya want for nothing?",
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    CheckHmac(std::string(20, '\xaa'), std::string(50, '\xdd'),
              "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    std::string key4;
    for (int i = 1; i <= 25; ++i) key4 += static_cast<char>(i);
    CheckHmac(key4, std::string(50, '\xcd'),
              "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    CheckHmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    CheckHmac(std::string(131, '\xaa'),
              "This is a test using a larger than block-size key and a larger than block-size "
              "data. The key needs to be hashed before being used by the HMAC algorithm.",
              "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

// Without the deployment secret nothing crosses tcp, in either direction, and a wrong secret is
// refused; the owner keeps serving the engine that has the right one.
void StrangersAreRefused(dp_engine* owner, dp_engine* friend_engine, const std::string& shm,
                         int64_t size) {
    const uint8_t wrong[] = "not the deployment secret";
    dp_engine* no_secret = Create("node-x", DP_ROLE_PEER, nullptr, 0);
    dp_engine* wrong_secret = Create("node-y", DP_ROLE_PEER, wrong, sizeof wrong - 1);
    std::vector<char> buf(4096, 'z');
    std::string before(reinterpret_cast<const char*>(buf.data()), 0);
    for (dp_engine* e : {no_secret, wrong_secret}) {
        int64_t seg = Open(e, "seg-a", "node-a", owner, shm, size);
        CHECK_EQ(dp_memory_register(e, reinterpret_cast<int64_t>(buf.data()), 4096, nullptr),
                 DP_OK);
        Batch write;
        write.Add(DP_OP_WRITE, buf.data(), seg, 0, 4096);
        CHECK_EQ(write.Run(e)[0], DP_ERR_DENIED);
        dp_engine_destroy(e);
    }
    // The owner's own server refuses a client that has no secret, too: see the Java tests for the
    // raw-socket cases (replay, truncation, slow senders, malformed requests).
    std::vector<char> back(4096);
    CHECK_EQ(
        dp_memory_register(friend_engine, reinterpret_cast<int64_t>(back.data()), 4096, nullptr),
        DP_OK);
    int64_t seg = Open(friend_engine, "seg-a", "node-a", owner, shm, size);
    Batch read;
    read.Add(DP_OP_READ, back.data(), seg, 0, 4096);
    CHECK_EQ(read.Run(friend_engine)[0], DP_OK);
    CHECK_EQ(dp_memory_unregister(friend_engine, reinterpret_cast<int64_t>(back.data()), nullptr),
             DP_OK);
}

// The same node label on another host identity is never mapped; files live only in shm_dir,
// are never reused or truncated without DP_SEGMENT_REPLACE.
void HostsAndFiles(dp_engine* owner, const std::string& shm, int64_t size) {
    dp_engine* twin = Create("node-a", DP_ROLE_PEER, kSecret, sizeof kSecret - 1, "test-host-2");
    Open(twin, "seg-a", "node-a", owner, shm, size, DP_ERR_FOREIGN_HOST);
    dp_engine_destroy(twin);
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(owner, "escape", "/tmp/wr-dp-test-escape", 4096, DP_SEGMENT_STORE,
                               &base, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_create(owner, "escape", "/dev/shm/../tmp/wr-dp-test-escape", 4096,
                               DP_SEGMENT_STORE, &base, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(
        dp_segment_create(owner, "dots", "/dev/shm/..", 4096, DP_SEGMENT_STORE, &base, nullptr),
        DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_create(owner, "twice", shm.c_str(), 4096, DP_SEGMENT_STORE, &base, nullptr),
             DP_ERR_EXISTS);  // seg-a's file: never reused, never truncated
    Open(owner, "elsewhere", "node-b", owner, "/etc/passwd", 1);  // tcp: no file is opened
    dp_engine* local = Create("node-a");
    Open(local, "outside", "node-a", owner, "/etc/passwd", 1, DP_ERR_UNKNOWN_SEGMENT);
    std::string link = shm + "-link";
    CHECK_EQ(::symlink(shm.c_str(), link.c_str()), 0);
    Open(local, "linked", "node-a", owner, link, size, DP_ERR_UNKNOWN_SEGMENT);
    ::unlink(link.c_str());
    dp_engine_destroy(local);
    std::string replaced = shm + "-replaced";
    CHECK_EQ(
        dp_segment_create(owner, "old", replaced.c_str(), 4096, DP_SEGMENT_STORE, &base, nullptr),
        DP_OK);
    reinterpret_cast<char*>(base)[0] = 42;
    CHECK_EQ(dp_segment_destroy(owner, "old", 0, nullptr),
             DP_OK);  // the file stays, as after a crash
    CHECK_EQ(
        dp_segment_create(owner, "new", replaced.c_str(), 4096, DP_SEGMENT_STORE, &base, nullptr),
        DP_ERR_EXISTS);
    CHECK_EQ(dp_segment_create(owner, "new", replaced.c_str(), 4096,
                               DP_SEGMENT_STORE | DP_SEGMENT_REPLACE, &base, nullptr),
             DP_OK);
    CHECK_EQ(reinterpret_cast<char*>(base)[0], 0);  // a fresh file
    CHECK_EQ(dp_segment_destroy(owner, "new", 1, nullptr), DP_OK);
}

double CpuSeconds() {
    struct rusage u {};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A segment file is reclaimed only when its sidecar is valid, names it and nobody holds the
// sidecar's lock (as after its owner was killed); a live owner's file, a file without a sidecar, a
// copy of a segment file under another name and a link are never touched, and a segment file is
// exactly its segment's bytes. (With real processes and SIGKILL: OrphanedSegmentFilesTest.)
void OrphanedFilesAreReclaimedOnlyWhenTheirOwnerIsGone(dp_engine* owner, const std::string& shm) {
    const std::string dir = "/dev/shm";
    const std::string live = shm + "-live", orphan = shm + "-orphan", plain = shm + "-plain",
                      copy = shm + "-copy", link = shm + "-link";
    auto name = [&](const std::string& path) { return path.substr(dir.size() + 1); };
    auto exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
    auto size = [](const std::string& path) {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
    };
    int64_t base = 0, bytes = -1;
    CHECK_EQ(dp_segment_create(owner, "live", live.c_str(), 8192, DP_SEGMENT_STORE, &base, nullptr),
             DP_OK);
    CHECK_EQ(size(live), 8192);  // byte-exact: the lock lives in the sidecar
    CHECK_EQ(exists(live + ".owner"), 1);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(live).c_str(), &bytes, nullptr), DP_ERR_EXISTS);
    CHECK_EQ(exists(live), 1);
    CHECK_EQ(dp_segment_create(owner, "orphan", orphan.c_str(), 4096, DP_SEGMENT_RECEIVE, &base,
                               nullptr),
             DP_OK);
    CHECK_EQ(size(orphan), 4096);
    CHECK_EQ(dp_segment_destroy(owner, "orphan", 0, nullptr), DP_OK);  // lock gone, files stay
    CHECK_EQ(exists(orphan), 1);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(orphan).c_str(), &bytes, nullptr), DP_OK);
    CHECK_EQ(exists(orphan), 0);
    CHECK_EQ(exists(orphan + ".owner"), 0);
    CHECK_EQ(bytes, 4096);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(orphan).c_str(), &bytes, nullptr), DP_ERR_NOT_FOUND);

    FILE* f = std::fopen(plain.c_str(), "w");  // a staging file, an older data plane's segment
    std::fputs("not a segment file", f);
    std::fclose(f);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(plain).c_str(), &bytes, nullptr), DP_ERR_NOT_FOUND);
    CHECK_EQ(exists(plain), 1);
    // A copy of a live sidecar beside it names another inode (and is nobody's lock): the file
    // stays, the copied sidecar goes.
    std::string cp_owner = "cp " + live + ".owner " + plain + ".owner";
    CHECK_EQ(std::system(cp_owner.c_str()), 0);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(plain).c_str(), &bytes, nullptr), DP_ERR_NOT_FOUND);
    CHECK_EQ(exists(plain), 1);
    CHECK_EQ(exists(plain + ".owner"), 0);
    std::string cp = "cp " + live + " " + copy;  // no sidecar of its own
    CHECK_EQ(std::system(cp.c_str()), 0);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(copy).c_str(), &bytes, nullptr), DP_ERR_NOT_FOUND);
    CHECK_EQ(exists(copy), 1);
    CHECK_EQ(
        dp_segment_create(owner, "linked", orphan.c_str(), 4096, DP_SEGMENT_STORE, &base, nullptr),
        DP_OK);
    CHECK_EQ(dp_segment_destroy(owner, "linked", 0, nullptr), DP_OK);
    CHECK_EQ(::symlink(orphan.c_str(), link.c_str()), 0);
    std::string link_owner = link + ".owner";
    std::string orphan_owner = orphan + ".owner";
    CHECK_EQ(::symlink(orphan_owner.c_str(), link_owner.c_str()), 0);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(link).c_str(), &bytes, nullptr), DP_ERR_NOT_FOUND);
    CHECK_EQ(exists(orphan), 1);  // never through a link
    CHECK_EQ(exists(orphan_owner), 1);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), "../etc", &bytes, nullptr), DP_ERR_INVALID_ARGUMENT);

    // An owner whose name was taken over never unlinks the new owner's files.
    CHECK_EQ(dp_segment_create(owner, "taken", orphan.c_str(), 4096,
                               DP_SEGMENT_STORE | DP_SEGMENT_REPLACE, &base, nullptr),
             DP_OK);
    dp_engine* successor = Create("node-a");
    CHECK_EQ(dp_segment_create(successor, "taken", orphan.c_str(), 4096,
                               DP_SEGMENT_STORE | DP_SEGMENT_REPLACE, &base, nullptr),
             DP_OK);
    CHECK_EQ(dp_segment_destroy(owner, "taken", 1, nullptr), DP_OK);
    CHECK_EQ(exists(orphan), 1);
    CHECK_EQ(exists(orphan_owner), 1);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(orphan).c_str(), &bytes, nullptr), DP_ERR_EXISTS);
    dp_engine_destroy(successor);  // exits without unlinking, like a killed owner
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(orphan).c_str(), &bytes, nullptr), DP_OK);
    CHECK_EQ(exists(orphan), 0);
    CHECK_EQ(exists(orphan_owner), 0);

    // A creator killed after making its sidecar, before writing its record, leaves an empty
    // sidecar (and an empty segment file, or none): both go once nobody holds the sidecar's lock,
    // never a segment file that has bytes.
    const std::string unwritten = shm + "-unwritten";
    auto touch = [](const std::string& path) {
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK_EQ(fd >= 0, 1);
        return fd;
    };
    int held = touch(unwritten + ".owner");
    ::close(touch(unwritten));
    CHECK_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);  // as a creator holds it while alive
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(unwritten).c_str(), &bytes, nullptr), DP_ERR_EXISTS);
    CHECK_EQ(exists(unwritten + ".owner"), 1);
    ::close(held);  // the creator dies
    bytes = -1;
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(unwritten).c_str(), &bytes, nullptr), DP_OK);
    CHECK_EQ(bytes, 0);
    CHECK_EQ(exists(unwritten), 0);
    CHECK_EQ(exists(unwritten + ".owner"), 0);
    ::close(touch(unwritten + ".owner"));  // killed before its segment file existed
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(unwritten).c_str(), &bytes, nullptr),
             DP_ERR_NOT_FOUND);
    CHECK_EQ(exists(unwritten + ".owner"), 0);
    ::close(touch(unwritten + ".owner"));
    int sized = touch(unwritten);
    CHECK_EQ(::write(sized, "bytes", 5), 5);
    ::close(sized);
    CHECK_EQ(dp_shm_reclaim(dir.c_str(), name(unwritten).c_str(), &bytes, nullptr),
             DP_ERR_NOT_FOUND);
    CHECK_EQ(exists(unwritten), 1);  // not ours to judge: it has bytes and no record naming it
    CHECK_EQ(exists(unwritten + ".owner"), 0);

    CHECK_EQ(dp_segment_destroy(owner, "live", 1, nullptr), DP_OK);
    CHECK_EQ(exists(live), 0);
    CHECK_EQ(exists(live + ".owner"), 0);
    for (const std::string& p : {plain, copy, link, link_owner, unwritten}) ::unlink(p.c_str());
}

// Out of descriptors, the server cannot accept the connection waiting in its backlog: it backs
// off instead of spinning on the readable listener, and serves again once descriptors are back.
void FdExhaustionNeitherSpinsNorKills(dp_engine* owner, dp_engine* client, const std::string& shm,
                                      int64_t size) {
    struct rlimit saved {};
    CHECK_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    int waiting = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_EQ(waiting >= 0, 1);
    struct rlimit tight = saved;
    tight.rlim_cur = static_cast<rlim_t>(waiting + 1);  // every lower descriptor is in use
    CHECK_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
    struct sockaddr_in addr {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(dp_engine_tcp_port(owner)));
    CHECK_EQ(::connect(waiting, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    double cpu = CpuSeconds();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    double spent = CpuSeconds() - cpu;
    CHECK_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    if (spent > 0.15) {
        std::fprintf(stderr, "accept loop used %.2f s of CPU in 1 s without descriptors\n", spent);
        ++failures;
    }
    ::close(waiting);
    std::vector<char> back(4096);
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(back.data()), 4096, nullptr),
             DP_OK);
    dp_engine* fresh = Create("node-c");  // needs new connections to the owner
    CHECK_EQ(dp_memory_register(fresh, reinterpret_cast<int64_t>(back.data()), 4096, nullptr),
             DP_OK);
    int64_t seg = Open(fresh, "seg-a", "node-a", owner, shm, size);
    Batch read;
    read.Add(DP_OP_READ, back.data(), seg, 0, 4096);
    CHECK_EQ(read.Run(fresh)[0], DP_OK);
    dp_engine_destroy(fresh);
    CHECK_EQ(dp_memory_unregister(client, reinterpret_cast<int64_t>(back.data()), nullptr), DP_OK);
}

// ---- connection slots (handshake cap and deadline, idle expiry, reaping) and replies ----

// A loopback socket connected to port, or -1.
int ConnectLoopback(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Whether the server has closed fd (EOF or reset) within timeout_ms; bytes it sent are skipped.
bool ClosedWithin(int fd, int timeout_ms) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char sink[256];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        until - std::chrono::steady_clock::now())
                        .count();
        struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
        int rc = ::poll(&p, 1, left > 0 ? static_cast<int>(left) : 0);
        if (rc <= 0) return false;
        ssize_t k = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) return true;
    }
}

// Threads of this process whose name is name (the engine names its threads dp-accept, dp-conn,
// dp-copy, dp-stream).
int ThreadsNamed(const char* name) {
    int n = 0;
    DIR* dir = ::opendir("/proc/self/task");
    if (dir == nullptr) return -1;
    while (struct dirent* e = ::readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string line;
        if (std::getline(comm, line) && line == name) ++n;
    }
    ::closedir(dir);
    return n;
}

// Polls ThreadsNamed(name) until it is expected or timeout_ms passed; returns the last count.
int ThreadsNamedWithin(const char* name, int expected, int timeout_ms) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int n = ThreadsNamed(name);
    while (n != expected && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        n = ThreadsNamed(name);
    }
    return n;
}

// Reads length bytes at offset 0 of seg through engine e into buf (registered by the caller).
int ReadOnce(dp_engine* e, int64_t seg, char* buf, int64_t length) {
    Batch read;
    read.Add(DP_OP_READ, buf, seg, 0, length);
    auto st = read.Run(e);
    return st.empty() ? DP_ERR_INTERNAL : st[0];
}

// Slow-loris: many unauthenticated clients that trickle their hello a byte at a time. They never
// hold an authenticated slot (their own small cap, the oldest closed when it is full) and each is
// closed at its handshake deadline (here io_timeout 1 s), however steadily it trickles; meanwhile
// an honest peer connects and reads.
void SlowHandshakesKeepNoPeerOut(const std::string& shm_base) {
    const int64_t size = 2 << 20;
    std::string shm = shm_base + "-loris";
    dp_engine* owner = CreateLimited("node-loris", 8, 1000, 0);
    int64_t base = 0;
    CHECK_EQ(
        dp_segment_create(owner, "seg-loris", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
        DP_OK);
    Fill(reinterpret_cast<char*>(base), size, 7);
    int port = dp_engine_tcp_port(owner);
    const int kSlow = 24;  // three times the connection cap
    std::vector<int> slow;
    for (int i = 0; i < kSlow; ++i) slow.push_back(ConnectLoopback(port));
    std::vector<bool> closed(kSlow, false);
    auto started = std::chrono::steady_clock::now();
    // Each sends one byte of a hello every 200 ms: never silent for a receive timeout.
    auto trickle = [&](int rounds) {
        for (int r = 0; r < rounds; ++r) {
            for (int i = 0; i < kSlow; ++i) {
                if (closed[i]) continue;
                char byte = 'W';
                if (::send(slow[i], &byte, 1, MSG_NOSIGNAL) != 1 || ClosedWithin(slow[i], 0))
                    closed[i] = true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    };
    trickle(2);
    dp_engine* honest = Create("node-honest");
    std::vector<char> buf(size);
    CHECK_EQ(dp_memory_register(honest, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
             DP_OK);
    int64_t seg = Open(honest, "seg-loris", "node-loris", owner, shm, size);
    CHECK_EQ(ReadOnce(honest, seg, buf.data(), size), DP_OK);
    CHECK_EQ(std::memcmp(buf.data(), reinterpret_cast<char*>(base), size), 0);
    trickle(10);  // 2.4 s after they connected: past every deadline
    int open_after = 0;
    for (int i = 0; i < kSlow; ++i) open_after += closed[i] ? 0 : 1;
    CHECK_EQ(open_after, 0);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (open_after != 0)
        std::fprintf(stderr, "%d trickling handshakes still open after %.1f s\n", open_after,
                     seconds);
    // The honest peer's pooled connections kept working throughout.
    CHECK_EQ(ReadOnce(honest, seg, buf.data(), size), DP_OK);
    for (int fd : slow) ::close(fd);
    dp_engine_destroy(honest);
    CHECK_EQ(dp_segment_destroy(owner, "seg-loris", 1, nullptr), DP_OK);
    dp_engine_destroy(owner);
}

// Passes the client side of the handshake on fd with the test deployment's peer key.
bool AuthenticateRaw(int fd) {
    std::vector<uint8_t> secret(kSecret, kSecret + sizeof kSecret - 1);
    dp::Key key = dp::RoleKey(secret, DP_ROLE_PEER);
    dp::Hello hello{dp::kHelloMagic, dp::kHandshakeVersion, DP_ROLE_PEER, 0, {}};
    dp::Challenge c{};
    dp::Proof proof{};
    dp::Ack ack{};
    if (dp::SendAll(fd, &hello, sizeof hello) != dp::Err::kOk ||
        dp::RecvAll(fd, &c, sizeof c) != dp::Err::kOk || c.status != dp::kChallengeOk)
        return false;
    dp::ClientMac(key, hello, c, proof.mac);
    return dp::SendAll(fd, &proof, sizeof proof) == dp::Err::kOk &&
           dp::RecvAll(fd, &ack, sizeof ack) == dp::Err::kOk && ack.status == DP_OK;
}

// An authenticated connection that sends no request for the idle timeout (1 s here) is closed by
// the server; a client whose pooled connections were closed that way reconnects unnoticed.
void IdleConnectionsExpire(const std::string& shm_base) {
    const int64_t size = 2 << 20;
    std::string shm = shm_base + "-idle";
    dp_engine* owner = CreateLimited("node-idle", 64, 10000, 1000);
    int64_t base = 0;
    CHECK_EQ(
        dp_segment_create(owner, "seg-idle", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
        DP_OK);
    Fill(reinterpret_cast<char*>(base), size, 9);
    int raw = ConnectLoopback(dp_engine_tcp_port(owner));
    CHECK_EQ(AuthenticateRaw(raw), true);
    CHECK_EQ(ClosedWithin(raw, 300), false);  // not before its time
    bool expired = ClosedWithin(raw, 2700);
    CHECK_EQ(expired, true);
    if (!expired) std::fprintf(stderr, "an idle authenticated connection still open after 3 s\n");
    ::close(raw);

    // This client keeps its connections for 30 s (half its 60 s idle timeout); the owner closes
    // them after 1 s. Its next transfer still succeeds.
    dp_engine* client = CreateLimited("node-idle-client", 64, 10000, 60000);
    std::vector<char> buf(size);
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
             DP_OK);
    int64_t seg = Open(client, "seg-idle", "node-idle", owner, shm, size);
    CHECK_EQ(ReadOnce(client, seg, buf.data(), size), DP_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(1600));
    std::fill(buf.begin(), buf.end(), 0);
    CHECK_EQ(ReadOnce(client, seg, buf.data(), size), DP_OK);
    CHECK_EQ(std::memcmp(buf.data(), reinterpret_cast<char*>(base), size), 0);
    dp_engine_destroy(client);
    CHECK_EQ(dp_segment_destroy(owner, "seg-idle", 1, nullptr), DP_OK);
    dp_engine_destroy(owner);
}

// A restarted owner (new engine, new port, the segment taken over) leaves no stream threads
// behind in its readers: opening the new descriptor stops the old peer. And a reader whose owner
// died keeps no stream threads past its idle time, although the segment stays open.
void RestartedPeersLeaveNoThreads(const std::string& shm_base) {
    const int64_t size = 2 << 20;
    std::string shm = shm_base + "-restart";
    CHECK_EQ(ThreadsNamed("dp-stream"), 0);
    dp_engine* reader = Create("node-reader");  // idle timeout 60 s: only reaping frees threads
    std::vector<char> buf(size);
    CHECK_EQ(dp_memory_register(reader, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
             DP_OK);
    int64_t base = 0;
    for (int generation = 0; generation < 3; ++generation) {
        dp_engine* owner = Create("node-restart");
        CHECK_EQ(dp_segment_create(owner, "seg-restart", shm.c_str(), size,
                                   DP_SEGMENT_STORE | DP_SEGMENT_REPLACE, &base, nullptr),
                 DP_OK);
        Fill(reinterpret_cast<char*>(base), size, generation);
        int64_t seg = Open(reader, "seg-restart", "node-restart", owner, shm, size);
        CHECK_EQ(ReadOnce(reader, seg, buf.data(), size), DP_OK);
        CHECK_EQ(std::memcmp(buf.data(), reinterpret_cast<char*>(base), size), 0);
        // this owner's two streams (one may still be starting: it names itself first thing),
        // none of an earlier one
        int streams = ThreadsNamedWithin("dp-stream", 2, 2000);
        CHECK_EQ(streams, 2);
        if (streams != 2)
            std::fprintf(stderr, "after restart %d: %d dp-stream threads, expected 2\n", generation,
                         streams);
        dp_engine_destroy(owner);  // killed: its file stays until the next one replaces it
    }
    dp_engine_destroy(reader);
    CHECK_EQ(ThreadsNamed("dp-stream"), 0);

    // Owner gone, segment still open: the streams leave after the client idle time (0.5 s).
    dp_engine* owner = Create("node-restart");
    CHECK_EQ(dp_segment_create(owner, "seg-restart", shm.c_str(), size,
                               DP_SEGMENT_STORE | DP_SEGMENT_REPLACE, &base, nullptr),
             DP_OK);
    dp_engine* quick = CreateLimited("node-quick", 64, 10000, 1000);
    CHECK_EQ(dp_memory_register(quick, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
             DP_OK);
    int64_t seg = Open(quick, "seg-restart", "node-restart", owner, shm, size);
    CHECK_EQ(ReadOnce(quick, seg, buf.data(), size), DP_OK);
    CHECK_EQ(dp_segment_destroy(owner, "seg-restart", 1, nullptr), DP_OK);
    dp_engine_destroy(owner);
    CHECK_EQ(ThreadsNamedWithin("dp-stream", 0, 3000), 0);
    CHECK_EQ(ThreadsNamedWithin("dp-conn", 0, 3000), 0);
    dp_engine_destroy(quick);
}

// A server (not ours) that passes the handshake and then answers every request, on whichever
// connection, with the next of statuses (no payload, value 4096); past them it closes.
class ScriptedServer {
 public:
    explicit ScriptedServer(std::vector<int32_t> statuses) : statuses_(std::move(statuses)) {
        listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in addr {};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        ::listen(listen_, 16);
        socklen_t len = sizeof addr;
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        accept_ = std::thread([this] {
            for (;;) {
                int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
                if (fd < 0) return;
                std::lock_guard<std::mutex> lock(mu_);
                fds_.push_back(fd);
                conns_.emplace_back([this, fd] { Serve(fd); });
            }
        });
    }
    // Call after the clients closed their connections.
    ~ScriptedServer() {
        ::shutdown(listen_, SHUT_RDWR);
        accept_.join();
        for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
        for (auto& t : conns_) t.join();
        for (int fd : fds_) ::close(fd);
        ::close(listen_);
    }
    int port() const { return port_; }

 private:
    void Serve(int fd) {
        std::vector<uint8_t> secret(kSecret, kSecret + sizeof kSecret - 1);
        dp::Hello hello{};
        dp::Challenge c{dp::kChallengeMagic, dp::kHandshakeVersion, dp::kChallengeOk, 0, {}, {}};
        dp::Proof proof{};
        dp::Ack ack{dp::kAckMagic, DP_OK};
        if (dp::RecvAll(fd, &hello, sizeof hello) != dp::Err::kOk ||
            !dp::FillRandom(c.nonce, dp::kNonce))
            return;
        dp::ServerMac(dp::RoleKey(secret, hello.role), hello, c, c.mac);
        if (dp::SendAll(fd, &c, sizeof c) != dp::Err::kOk ||
            dp::RecvAll(fd, &proof, sizeof proof) != dp::Err::kOk ||
            dp::SendAll(fd, &ack, sizeof ack) != dp::Err::kOk)
            return;
        for (;;) {
            dp::ReqHeader h{};
            char name[dp::kMaxName];
            uint8_t mac[dp::kRequestMac];
            if (dp::RecvAll(fd, &h, sizeof h) != dp::Err::kOk || h.name_len > dp::kMaxName ||
                dp::RecvAll(fd, name, h.name_len) != dp::Err::kOk ||
                dp::RecvAll(fd, mac, sizeof mac) != dp::Err::kOk)
                return;
            if (h.op == static_cast<uint32_t>(dp::Op::kWrite) &&
                dp::Discard(fd, h.length) != dp::Err::kOk)
                return;
            size_t i = next_.fetch_add(1);
            if (i >= statuses_.size()) return;
            dp::RespHeader resp{statuses_[i], 0, 4096};
            if (dp::SendAll(fd, &resp, sizeof resp) != dp::Err::kOk) return;
        }
    }

    const std::vector<int32_t> statuses_;
    std::atomic<size_t> next_{0};
    int listen_ = -1;
    int port_ = 0;
    std::thread accept_;
    std::mutex mu_;  // guards fds_ and conns_
    std::vector<int> fds_;
    std::vector<std::thread> conns_;
};

// A reply status is a success only when it is DP_OK: DP_PENDING, any other positive value and
// codes no server sends are DP_ERR_PROTOCOL; a refusal a server does send keeps its own code.
void OnlyOkRepliesSucceed() {
    const int64_t size = 1 << 20;
    ScriptedServer server(
        {DP_PENDING, 7, -77, DP_ERR_OUT_OF_BOUNDS, 3, DP_ERR_SEGMENT_FULL, DP_ERR_CLOSED});
    dp_engine* client = Create("node-client", DP_ROLE_STORER);
    std::vector<char> buf(4096);
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(buf.data()), 4096, nullptr),
             DP_OK);
    int64_t seg = -1;
    CHECK_EQ(dp_segment_open(client, "seg-scripted", "node-scripted", kHost, "127.0.0.1",
                             server.port(), "/dev/shm/wr-h1-none", size, 1, &seg, nullptr),
             DP_OK);
    for (int expected : {DP_ERR_PROTOCOL, DP_ERR_PROTOCOL, DP_ERR_PROTOCOL, DP_ERR_OUT_OF_BOUNDS}) {
        Batch read;
        read.Add(DP_OP_READ, buf.data(), seg, 0, 4096);
        CHECK_EQ(read.Run(client)[0], expected);
    }
    int64_t offset = -1;
    dp_status* st = dp_status_new();
    CHECK_EQ(dp_segment_alloc(client, seg, 4096, &offset, st), DP_ERR_PROTOCOL);
    CHECK_EQ(Contains(dp_status_message(st), "out of protocol"), true);
    CHECK_EQ(dp_segment_alloc(client, seg, 4096, &offset, nullptr), DP_ERR_SEGMENT_FULL);
    CHECK_EQ(dp_segment_free(client, seg, 0, nullptr), DP_ERR_PROTOCOL);  // no server says CLOSED
    dp_status_delete(st);
    dp_engine_destroy(client);  // before the server, which waits for its connections to close
}

[[noreturn]] void ThrowInCopy(const dp::CopyJob&) {
    throw std::runtime_error("injected copy fault");
}

// A copy that throws fails its task with DP_ERR_INTERNAL and a message saying why, on a pool thread
// or on the waiting thread; the process goes on and the next copy works.
void FailingCopyFailsItsTask(const std::string& shm_base) {
    const int64_t size = 16 << 20;  // two chunks for the copy pool
    std::string shm = shm_base + "-copyfault";
    dp_engine* owner = Create("node-copy");
    dp_engine* local = Create("node-copy");
    int64_t base = 0;
    CHECK_EQ(
        dp_segment_create(owner, "seg-copy", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
        DP_OK);
    std::vector<char> buf(size);
    Fill(buf.data(), size, 3);
    CHECK_EQ(dp_memory_register(local, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
             DP_OK);
    int64_t seg = Open(local, "seg-copy", "node-copy", owner, shm, size);
    dp::copy_fault_for_tests.store(&ThrowInCopy);
    for (int32_t flags : {0, DP_BATCH_CRC32C}) {
        int32_t op = DP_OP_WRITE;
        int64_t addr = reinterpret_cast<int64_t>(buf.data()), at = 0, len = size;
        dp_batch* b = nullptr;
        dp_status* st = dp_status_new();
        CHECK_EQ(
            dp_batch_submit_flags(local, 1, &op, &addr, &seg, &at, &len, nullptr, flags, &b, st),
            DP_OK);
        CHECK_EQ(dp_batch_wait(b, 10000, st), DP_OK);
        int64_t bytes = 0;
        CHECK_EQ(dp_batch_task_status(b, 0, &bytes, st), DP_ERR_INTERNAL);
        CHECK_EQ(Contains(dp_status_message(st), "the local copy failed: injected copy fault"),
                 true);
        dp_batch_free(b);
        dp_status_delete(st);
    }
    dp::copy_fault_for_tests.store(nullptr);
    Batch write;
    write.Add(DP_OP_WRITE, buf.data(), seg, 0, size);
    CHECK_EQ(write.Run(local)[0], DP_OK);
    CHECK_EQ(std::memcmp(buf.data(), reinterpret_cast<char*>(base), size), 0);
    dp_engine_destroy(local);
    CHECK_EQ(dp_segment_destroy(owner, "seg-copy", 1, nullptr), DP_OK);
    dp_engine_destroy(owner);
}

// A write queued against a receive segment that its owner then created again under the same name
// (a loader whose engine registered again) never lands in the new segment's bytes: it names the
// incarnation it was meant for, and the owner refuses it. Opening the new descriptor works again.
void LateWriteAfterReRegisterIsRefused(const std::string& shm_base) {
    const int64_t size = 1 << 20;
    std::string shm = shm_base + "-late";
    dp_engine* owner = Create("node-late-owner");
    dp_engine* writer = Create("node-late-writer");
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(owner, "seg-late", shm.c_str(), size,
                               DP_SEGMENT_RECEIVE | DP_SEGMENT_REPLACE, &base, nullptr),
             DP_OK);
    int64_t first = 0, second = 0;
    CHECK_EQ(dp_segment_incarnation(owner, "seg-late", &first, nullptr), DP_OK);
    CHECK_EQ(first != 0, true);
    std::vector<char> buf(size);
    Fill(buf.data(), size, 9);
    CHECK_EQ(dp_memory_register(writer, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
             DP_OK);
    int64_t seg = Open(writer, "seg-late", "node-late-owner", owner, shm, size);
    // The owner registers the segment again: a new file, new bytes, the same name.
    CHECK_EQ(dp_segment_destroy(owner, "seg-late", 1, nullptr), DP_OK);
    CHECK_EQ(dp_segment_create(owner, "seg-late", shm.c_str(), size,
                               DP_SEGMENT_RECEIVE | DP_SEGMENT_REPLACE, &base, nullptr),
             DP_OK);
    CHECK_EQ(dp_segment_incarnation(owner, "seg-late", &second, nullptr), DP_OK);
    CHECK_EQ(second != first, true);
    Batch late;
    late.Add(DP_OP_WRITE, buf.data(), seg, 0, size);
    CHECK_EQ(late.Run(writer)[0], DP_ERR_STALE_SEGMENT);
    Batch read;
    read.Add(DP_OP_READ, buf.data(), seg, 0, 4096);
    CHECK_EQ(read.Run(writer)[0], DP_ERR_STALE_SEGMENT);
    std::vector<char> zeros(size);
    CHECK_EQ(std::memcmp(reinterpret_cast<char*>(base), zeros.data(), size), 0);
    // The new descriptor (its incarnation) reaches the new bytes.
    int64_t fresh = Open(writer, "seg-late", "node-late-owner", owner, shm, size);
    CHECK_EQ(fresh != seg, true);
    Batch now;
    now.Add(DP_OP_WRITE, buf.data(), fresh, 0, size);
    CHECK_EQ(now.Run(writer)[0], DP_OK);
    CHECK_EQ(std::memcmp(reinterpret_cast<char*>(base), buf.data(), size), 0);
    int64_t own = 0;
    CHECK_EQ(dp_segment_incarnation(writer, "seg-late", &own, nullptr), DP_ERR_UNKNOWN_SEGMENT);
    dp_engine_destroy(writer);
    CHECK_EQ(dp_segment_destroy(owner, "seg-late", 1, nullptr), DP_OK);
    dp_engine_destroy(owner);
}

// A receive segment renewed for a new registration (dp_segment_renew) keeps its memory (same
// address, same file, its bytes) and refuses what is addressed to its earlier incarnation: over
// tcp, from an engine mapping its file (same host) and from its owner. New descriptors reach it.
void RenewedSegmentKeepsMemoryAndRefusesTheOldIncarnation(const std::string& shm_base) {
    const int64_t size = 1 << 20;
    std::string shm = shm_base + "-renew";
    dp_engine* owner = Create("node-renew");
    dp_engine* remote = Create("node-renew-remote");
    dp_engine* local = Create("node-renew");  // maps the owner's file
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(owner, "seg-renew", shm.c_str(), size,
                               DP_SEGMENT_RECEIVE | DP_SEGMENT_REPLACE, &base, nullptr),
             DP_OK);
    struct stat before {};
    CHECK_EQ(::stat(shm.c_str(), &before), 0);
    int64_t first = 0;
    CHECK_EQ(dp_segment_incarnation(owner, "seg-renew", &first, nullptr), DP_OK);
    std::vector<char> kept(size), late(size);
    Fill(kept.data(), size, 3);
    Fill(late.data(), size, 4);
    for (dp_engine* e : {remote, local})
        CHECK_EQ(dp_memory_register(e, reinterpret_cast<int64_t>(late.data()), size, nullptr),
                 DP_OK);
    int64_t over_tcp = Open(remote, "seg-renew", "node-renew", owner, shm, size);
    int64_t mapped = Open(local, "seg-renew", "node-renew", owner, shm, size);
    int64_t own = Open(owner, "seg-renew", "node-renew", owner, shm, size);
    std::memcpy(reinterpret_cast<char*>(base), kept.data(), size);

    int64_t second = 0;
    CHECK_EQ(dp_segment_renew(owner, "seg-renew", &second, nullptr), DP_OK);
    CHECK_EQ(second != first && second != 0, true);
    int64_t now = 0;
    CHECK_EQ(dp_segment_incarnation(owner, "seg-renew", &now, nullptr), DP_OK);
    CHECK_EQ(now, second);
    struct stat after {};
    CHECK_EQ(::stat(shm.c_str(), &after), 0);
    CHECK_EQ(after.st_ino == before.st_ino, true);  // the same file, no new pages

    // Every way of writing with the earlier incarnation is refused; the bytes stay.
    for (auto [e, seg] : {std::pair{remote, over_tcp}, std::pair{local, mapped}}) {
        Batch write;
        write.Add(DP_OP_WRITE, late.data(), seg, 0, size);
        CHECK_EQ(write.Run(e)[0], DP_ERR_STALE_SEGMENT);
    }
    CHECK_EQ(dp_segment_probe(local, mapped, nullptr), DP_ERR_STALE_SEGMENT);
    {
        Batch write;
        write.Add(DP_OP_WRITE, reinterpret_cast<char*>(base) + size - 4096, own, 0, 4096);
        CHECK_EQ(write.Run(owner)[0], DP_ERR_STALE_SEGMENT);
    }
    CHECK_EQ(std::memcmp(reinterpret_cast<char*>(base), kept.data(), size), 0);

    // The new descriptor reaches the same memory, over both transports.
    for (dp_engine* e : {remote, local}) {
        int64_t fresh = Open(e, "seg-renew", "node-renew", owner, shm, size);
        Batch write;
        write.Add(DP_OP_WRITE, late.data(), fresh, 0, size);
        CHECK_EQ(write.Run(e)[0], DP_OK);
        CHECK_EQ(std::memcmp(reinterpret_cast<char*>(base), late.data(), size), 0);
        std::memcpy(reinterpret_cast<char*>(base), kept.data(), size);
    }
    int64_t again = 0;
    CHECK_EQ(dp_segment_renew(remote, "seg-renew", &again, nullptr), DP_ERR_UNKNOWN_SEGMENT);
    int64_t store_base = 0;
    CHECK_EQ(dp_segment_create(owner, "seg-renew-store", (shm + "-store").c_str(), size,
                               DP_SEGMENT_STORE | DP_SEGMENT_REPLACE, &store_base, nullptr),
             DP_OK);
    CHECK_EQ(dp_segment_renew(owner, "seg-renew-store", &again, nullptr), DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_destroy(owner, "seg-renew-store", 1, nullptr), DP_OK);
    dp_engine_destroy(remote);
    dp_engine_destroy(local);
    CHECK_EQ(dp_segment_destroy(owner, "seg-renew", 1, nullptr), DP_OK);
    dp_engine_destroy(owner);
}

// A cancelled batch moves no byte once dp_batch_cancel returned: its chunks still queued fail with
// DP_ERR_CANCELLED, those in flight finished. Over tcp (a 64 MiB write, 64 chunks behind a 2 MiB
// window) and over the local transport (8 MiB chunks on the copy pool).
void CancelledBatchWritesNoMore(const std::string& shm_base) {
    const int64_t size = 64 << 20;
    std::string shm = shm_base + "-cancel";
    dp_engine* owner = Create("node-cancel-owner");
    dp_engine* writer = Create("node-cancel-writer");
    dp_engine* local = Create("node-cancel-owner");
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(owner, "seg-cancel", shm.c_str(), size, DP_SEGMENT_RECEIVE, &base,
                               nullptr),
             DP_OK);
    std::vector<char> buf(size);
    Fill(buf.data(), size, 5);
    for (dp_engine* e : {writer, local}) {
        std::memset(reinterpret_cast<char*>(base), 0, size);
        CHECK_EQ(dp_memory_register(e, reinterpret_cast<int64_t>(buf.data()), size, nullptr),
                 DP_OK);
        int64_t seg = Open(e, "seg-cancel", "node-cancel-owner", owner, shm, size);
        // Many tasks, so that the local transport has chunks queued behind its two pool threads.
        const int32_t tasks = 8;
        std::vector<int32_t> ops(tasks, DP_OP_WRITE);
        std::vector<int64_t> addrs, segs(tasks, seg), offsets, lengths(tasks, size / tasks);
        for (int32_t i = 0; i < tasks; ++i) {
            addrs.push_back(reinterpret_cast<int64_t>(buf.data()) + i * (size / tasks));
            offsets.push_back(i * (size / tasks));
        }
        dp_batch* b = nullptr;
        CHECK_EQ(dp_batch_submit(e, tasks, ops.data(), addrs.data(), segs.data(), offsets.data(),
                                 lengths.data(), nullptr, &b, nullptr),
                 DP_OK);
        CHECK_EQ(dp_batch_cancel(b, 10000, nullptr), DP_OK);
        std::vector<char> after(reinterpret_cast<char*>(base),
                                reinterpret_cast<char*>(base) + size);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        CHECK_EQ(std::memcmp(after.data(), reinterpret_cast<char*>(base), size), 0);
        int cancelled = 0;
        for (int32_t i = 0; i < tasks; ++i) {
            int64_t bytes = 0;
            int st = dp_batch_task_status(b, i, &bytes, nullptr);
            if (st == DP_ERR_CANCELLED) ++cancelled;
            if (st != DP_ERR_CANCELLED) CHECK_EQ(st, DP_OK);
        }
        CHECK_EQ(cancelled > 0, true);  // the cancel came before the last chunk moved
        CHECK_EQ(dp_batch_cancel(b, 0, nullptr), DP_OK);  // idempotent
        dp_batch_free(b);
        CHECK_EQ(dp_memory_unregister(e, reinterpret_cast<int64_t>(buf.data()), nullptr), DP_OK);
    }
    dp_engine_destroy(writer);
    dp_engine_destroy(local);
    CHECK_EQ(dp_segment_destroy(owner, "seg-cancel", 1, nullptr), DP_OK);
    dp_engine_destroy(owner);
}

}  // namespace

int main() {
    CryptoMatchesTheStandards();
    const int64_t size = 24 << 20;  // spans several 8 MiB chunks
    std::string shm = "/dev/shm/wr-h1-dp-test-" + std::to_string(::getpid());
    // First, while no other engine runs: they count this process's engine threads by name.
    RestartedPeersLeaveNoThreads(shm);
    SlowHandshakesKeepNoPeerOut(shm);
    IdleConnectionsExpire(shm);
    OnlyOkRepliesSucceed();
    FailingCopyFailsItsTask(shm);
    LateWriteAfterReRegisterIsRefused(shm);
    RenewedSegmentKeepsMemoryAndRefusesTheOldIncarnation(shm);
    CancelledBatchWritesNoMore(shm);
    dp_engine* a = Create("node-a");
    dp_engine* b = Create("node-b");
    dp_engine* a2 = Create("node-a");
    dp_engine* remover = Create("control", DP_ROLE_REMOVER);
    dp_engine* bad = nullptr;
    CHECK_EQ(dp_engine_create("", kHost, "127.0.0.1", 0, 2, 2, 0, 0, 8, 0, "/dev/shm", kKeys.data(),
                              kKeysLen, DP_ROLE_PEER, &bad, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_engine_create("n", kHost, "no-such-host.invalid", 0, 2, 2, 0, 0, 8, 0, "/dev/shm",
                              kKeys.data(), kKeysLen, DP_ROLE_PEER, &bad, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_engine_create("n", kHost, "127.0.0.1", 0, 2, 2, 0, 0, 8, 0, "/dev/shm",
                              kKeys.data(), kKeysLen, 9, &bad, nullptr),
             DP_ERR_INVALID_ARGUMENT);
    dp_engine* v6 = nullptr;
    if (dp_engine_create("n6", kHost, "::1", 0, 2, 2, 0, 0, 8, 0, "/dev/shm", kKeys.data(),
                         kKeysLen, DP_ROLE_PEER, &v6, nullptr) == DP_OK) {
        CHECK_EQ(dp_engine_tcp_port(v6) > 0, 1);
        dp_engine_destroy(v6);
    }
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(a, "seg-a", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
             DP_OK);
    CHECK_EQ(dp_segment_create(a, "seg-a", shm.c_str(), size, DP_SEGMENT_STORE, &base, nullptr),
             DP_ERR_EXISTS);

    RunTransport(a, b, remover, "node-a", shm, size, "tcp-notify", true);
    RunTransport(a, a2, remover, "node-a", shm, size, "local-notify", false);
    int64_t counters[DP_COUNTER_COUNT];
    CHECK_EQ(dp_engine_counters(remover, counters, nullptr), DP_OK);
    CHECK_EQ(counters[DP_COUNTER_TCP_WRITTEN], size);
    CHECK_EQ(dp_engine_counters(b, counters, nullptr), DP_OK);
    CHECK_EQ(counters[DP_COUNTER_TCP_WRITTEN], 0);
    CHECK_EQ(counters[DP_COUNTER_TCP_READ], size);
    CHECK_EQ(counters[DP_COUNTER_LOCAL_READ], 0);
    CHECK_EQ(dp_engine_counters(a2, counters, nullptr), DP_OK);
    CHECK_EQ(counters[DP_COUNTER_LOCAL_WRITTEN], size);
    CHECK_EQ(counters[DP_COUNTER_TCP_WRITTEN], 0);
    CHECK_EQ(dp_engine_counters(a, counters, nullptr), DP_OK);
    CHECK_EQ(counters[DP_COUNTER_TCP_SERVED_WRITTEN], size);
    {
        // A notify for a name the target never registered is dropped: nothing is created.
        std::vector<char> buf(4096);
        CHECK_EQ(dp_memory_register(remover, reinterpret_cast<int64_t>(buf.data()), 4096, nullptr),
                 DP_OK);
        int64_t seg = Open(remover, "seg-a", "node-a", a, shm, size);
        Batch write;
        write.Add(DP_OP_WRITE, buf.data(), seg, 0, 4096);
        write.Run(remover, "never-registered");
        int64_t value = 0;
        CHECK_EQ(dp_notify_get(a, "never-registered", &value, nullptr), DP_ERR_NOT_FOUND);
        CHECK_EQ(dp_memory_unregister(remover, reinterpret_cast<int64_t>(buf.data()), nullptr),
                 DP_OK);
    }
    StatusNamesWhatFailed(a, b, shm, size);
    StrangersAreRefused(a, b, shm, size);
    FdExhaustionNeitherSpinsNorKills(a, b, shm, size);
    HostsAndFiles(a, shm, size);
    OrphanedFilesAreReclaimedOnlyWhenTheirOwnerIsGone(a, shm);

    ReceiveSegmentIsNeverAllocated(a, b, a2, shm);
    CarveKeepsPiecesAndFreesTheRest(a, b, shm);
    AlternateEndsKeepGenerationsApart(a, b, shm);

    int64_t value = 0;
    CHECK_EQ(dp_notify_wait(a, "never", 1, 10, &value, nullptr), DP_ERR_NOT_FOUND);
    CHECK_EQ(dp_notify_register(a, "never", nullptr), DP_OK);
    CHECK_EQ(dp_notify_wait(a, "never", 1, 10, &value, nullptr), DP_ERR_TIMEOUT);

    // Peer gone: the owner goes away, the tcp client gets PEER_GONE, not a hang.
    int64_t seg = Open(b, "seg-a", "node-a", a, shm, size);
    std::vector<char> buf(1 << 20);
    CHECK_EQ(dp_memory_register(b, reinterpret_cast<int64_t>(buf.data()), 1 << 20, nullptr), DP_OK);
    CHECK_EQ(dp_segment_destroy(a, "seg-a", 1, nullptr), DP_OK);
    // A stale view of a destroyed own segment reads private zero pages, never faults.
    CHECK_EQ(reinterpret_cast<volatile char*>(base)[size - 1], 0);
    CHECK_EQ(dp_segment_destroy(a, "seg-a", 1, nullptr), DP_ERR_UNKNOWN_SEGMENT);
    dp_engine_destroy(a);
    Batch gone;
    gone.Add(DP_OP_READ, buf.data(), seg, 0, 1 << 20);
    CHECK_EQ(gone.Run(b)[0], DP_ERR_PEER_GONE);

    dp_engine_shutdown(b);
    dp_batch* closed = nullptr;
    CHECK_EQ(dp_batch_submit(b, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &closed,
                             nullptr),
             DP_ERR_CLOSED);
    dp_engine_destroy(b);
    dp_engine_destroy(a2);
    dp_engine_destroy(remover);
    dp_engine_destroy(nullptr);
    dp_batch_free(nullptr);

    double gbps = 0;
    std::vector<char> x(8 << 20), y(8 << 20);
    CHECK_EQ(dp_bench_memcpy(reinterpret_cast<int64_t>(x.data()),
                             reinterpret_cast<int64_t>(y.data()), 8 << 20, 2, &gbps),
             DP_OK);
    CHECK_EQ(dp_bench_socket(reinterpret_cast<int64_t>(x.data()),
                             reinterpret_cast<int64_t>(y.data()), 8 << 20, 2, 2, &gbps),
             DP_OK);

    ShutdownWhileSubmitting(shm);

    if (failures == 0) std::printf("dp_test: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
