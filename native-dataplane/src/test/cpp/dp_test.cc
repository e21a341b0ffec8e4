// Test driver for the C API, meant for sanitizer and valgrind runs (see README.md).
// Two engines in one process: "node-a" owns segments, "node-b" reaches them over tcp and
// a second "node-a" engine reaches them through the local transport.
#include "dp.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

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
    std::vector<int> Run(dp_engine* e, const char* notify = nullptr) {
        dp_batch* b = nullptr;
        std::vector<int> statuses;
        int rc = dp_batch_submit(e, static_cast<int32_t>(ops.size()), ops.data(), addrs.data(),
                                 segs.data(), offsets.data(), lengths.data(), notify, &b);
        CHECK_EQ(rc, DP_OK);
        if (rc != DP_OK) return statuses;
        CHECK_EQ(dp_batch_wait(b, -1), DP_OK);
        for (size_t i = 0; i < ops.size(); ++i) {
            int64_t bytes = 0;
            int st = dp_batch_task_status(b, static_cast<int32_t>(i), &bytes);
            if (st == DP_OK) CHECK_EQ(bytes, lengths[i]);
            statuses.push_back(st);
        }
        CHECK_EQ(dp_batch_notify_status(b), DP_OK);
        dp_batch_free(b);
        return statuses;
    }
};

void Fill(char* p, int64_t n, int seed) {
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<char>((i * 31 + seed) & 0xff);
}

void RunTransport(dp_engine* owner, dp_engine* client, const std::string& owner_label,
                  const std::string& shm, int64_t size, const char* notify) {
    int64_t seg = 0;
    CHECK_EQ(dp_segment_open(client, "seg-a", owner_label.c_str(), "127.0.0.1",
                             dp_engine_tcp_port(owner), shm.c_str(), size, &seg),
             DP_OK);
    std::vector<char> buf(static_cast<size_t>(size));
    Fill(buf.data(), size, 7);
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(buf.data()), size), DP_OK);

    Batch write;
    write.Add(DP_OP_WRITE, buf.data(), seg, 0, size / 2);
    write.Add(DP_OP_WRITE, buf.data() + size / 2, seg, size / 2, size / 2);
    for (int st : write.Run(client, notify)) CHECK_EQ(st, DP_OK);
    if (notify != nullptr) {
        int64_t value = 0;
        CHECK_EQ(dp_notify_wait(owner, notify, 1, 5000, &value), DP_OK);
        CHECK_EQ(value, 1);
    }

    std::vector<char> back(static_cast<size_t>(size));
    CHECK_EQ(dp_memory_register(client, reinterpret_cast<int64_t>(back.data()), size), DP_OK);
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

    int64_t off1 = -1, off2 = -1, off3 = -1;
    CHECK_EQ(dp_segment_alloc(client, seg, size / 2, &off1), DP_OK);
    CHECK_EQ(dp_segment_alloc(client, seg, size / 2, &off2), DP_OK);
    CHECK_EQ(dp_segment_alloc(client, seg, 64, &off3), DP_ERR_SEGMENT_FULL);
    CHECK_EQ(dp_segment_free(client, seg, off1), DP_OK);
    CHECK_EQ(dp_segment_free(client, seg, off1), DP_ERR_NOT_FOUND);
    CHECK_EQ(dp_segment_free(client, seg, off2), DP_OK);

    CHECK_EQ(dp_memory_unregister(client, reinterpret_cast<int64_t>(buf.data())), DP_OK);
    CHECK_EQ(dp_memory_unregister(client, reinterpret_cast<int64_t>(back.data())), DP_OK);
    CHECK_EQ(dp_segment_close(client, seg), DP_OK);
}

// Batches submitted while another thread shuts the engine down all finish (OK or CLOSED),
// none hangs, and the engine frees cleanly.
void ShutdownWhileSubmitting(const std::string& shm_base) {
    const int64_t size = 16 << 20;
    std::string shm = shm_base + "-race";
    dp_engine* e = nullptr;
    CHECK_EQ(dp_engine_create("node-r", "127.0.0.1", 0, 2, 2, 10000, &e), DP_OK);
    int64_t base = 0, seg = 0;
    CHECK_EQ(dp_segment_create(e, "race", shm.c_str(), size, DP_SEGMENT_STORE, &base), DP_OK);
    CHECK_EQ(dp_segment_open(e, "race", "node-r", "127.0.0.1", dp_engine_tcp_port(e), shm.c_str(),
                             size, &seg),
             DP_OK);
    std::vector<char> buf(static_cast<size_t>(size));
    CHECK_EQ(dp_memory_register(e, reinterpret_cast<int64_t>(buf.data()), size), DP_OK);
    int bad = 0;
    std::thread submitter([&] {
        for (int i = 0; i < 200; ++i) {
            int32_t op = DP_OP_WRITE;
            int64_t addr = reinterpret_cast<int64_t>(buf.data()), off = 0, len = size;
            dp_batch* b = nullptr;
            int rc = dp_batch_submit(e, 1, &op, &addr, &seg, &off, &len, nullptr, &b);
            if (rc == DP_ERR_CLOSED) break;
            if (rc != DP_OK || dp_batch_wait(b, 60000) != DP_OK) ++bad;
            int64_t bytes = 0;
            int st = dp_batch_task_status(b, 0, &bytes);
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
    CHECK_EQ(dp_segment_create(owner, "recv", shm.c_str(), size, 7, &base),
             DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_create(owner, "recv", shm.c_str(), size, DP_SEGMENT_RECEIVE, &base), DP_OK);
    int64_t free_bytes = -1;
    CHECK_EQ(dp_segment_free_bytes(owner, "recv", &free_bytes), DP_OK);
    CHECK_EQ(free_bytes, 0);
    std::vector<char> buf(static_cast<size_t>(size));
    Fill(buf.data(), size, 3);
    dp_engine* engines[] = {owner, tcp_client, local_client};
    for (dp_engine* e : engines) {
        int64_t seg = 0, off = -1;
        CHECK_EQ(dp_segment_open(e, "recv", "node-a", "127.0.0.1", dp_engine_tcp_port(owner),
                                 shm.c_str(), size, &seg),
                 DP_OK);
        CHECK_EQ(dp_segment_alloc(e, seg, 64, &off), DP_ERR_SEGMENT_FULL);
        CHECK_EQ(off, -1);
        CHECK_EQ(dp_memory_register(e, reinterpret_cast<int64_t>(buf.data()), size), DP_OK);
        Batch write;
        write.Add(DP_OP_WRITE, buf.data(), seg, 0, size);
        for (int st : write.Run(e, "recv-landed")) CHECK_EQ(st, DP_OK);
        CHECK_EQ(
            std::memcmp(reinterpret_cast<const char*>(base), buf.data(), static_cast<size_t>(size)),
            0);
        CHECK_EQ(dp_memory_unregister(e, reinterpret_cast<int64_t>(buf.data())), DP_OK);
        if (e != owner) CHECK_EQ(dp_segment_close(e, seg), DP_OK);
    }
    int64_t value = 0;
    CHECK_EQ(dp_notify_get(owner, "recv-landed", &value), DP_OK);
    CHECK_EQ(value, 3);
    CHECK_EQ(dp_segment_destroy(owner, "recv", 1), DP_OK);
}

// Carving: bytes written in place into one allocated block become separately freeable
// pieces, the gaps between them go back to the free list, and nothing leaks: once every piece is
// freed, the whole segment is one hole again.
void CarveKeepsPiecesAndFreesTheRest(dp_engine* owner, dp_engine* peer,
                                     const std::string& shm_base) {
    const int64_t size = 64 << 10;
    std::string shm = shm_base + "-carve";
    int64_t base = 0, seg = 0, block = -1, free_bytes = -1;
    CHECK_EQ(dp_segment_create(owner, "carve", shm.c_str(), size, DP_SEGMENT_STORE, &base), DP_OK);
    CHECK_EQ(dp_segment_open(owner, "carve", "node-a", "127.0.0.1", dp_engine_tcp_port(owner),
                             shm.c_str(), size, &seg),
             DP_OK);
    CHECK_EQ(dp_segment_alloc(owner, seg, 4096, &block), DP_OK);
    CHECK_EQ(block, 0);
    const int64_t starts[] = {10, 200, 3000};
    const int64_t lengths[] = {100, 1000, 64};
    const int64_t overlapping[] = {10, 100, 3000};
    CHECK_EQ(dp_segment_carve(owner, seg, block, 3, overlapping, lengths), DP_ERR_INVALID_ARGUMENT);
    const int64_t outside[] = {4090};
    CHECK_EQ(dp_segment_carve(owner, seg, block, 1, outside, lengths), DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_carve(owner, seg, 64, 3, starts, lengths), DP_ERR_NOT_FOUND);
    int64_t peer_seg = 0;
    CHECK_EQ(dp_segment_open(peer, "carve", "node-a", "127.0.0.1", dp_engine_tcp_port(owner),
                             shm.c_str(), size, &peer_seg),
             DP_OK);
    CHECK_EQ(dp_segment_carve(peer, peer_seg, block, 3, starts, lengths), DP_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dp_segment_close(peer, peer_seg), DP_OK);
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes), DP_OK);
    CHECK_EQ(free_bytes, size - 4096);  // refused carves changed nothing

    CHECK_EQ(dp_segment_carve(owner, seg, block, 3, starts, lengths), DP_OK);
    // Extents: [0,128) [192,1216) [2944,3072); the aligned gaps between them are free.
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes), DP_OK);
    CHECK_EQ(free_bytes, size - 1280);
    CHECK_EQ(dp_segment_free(owner, seg, block), DP_ERR_NOT_FOUND);  // the block is gone
    int64_t hole = -1;
    CHECK_EQ(dp_segment_alloc(owner, seg, 64, &hole), DP_OK);  // first fit: the gap at 128
    CHECK_EQ(hole, 128);
    CHECK_EQ(dp_segment_free(owner, seg, hole), DP_OK);
    for (int64_t key : starts) CHECK_EQ(dp_segment_free(owner, seg, key), DP_OK);
    CHECK_EQ(dp_segment_free(owner, seg, 200), DP_ERR_NOT_FOUND);
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes), DP_OK);
    CHECK_EQ(free_bytes, size);
    int64_t whole = -1;
    CHECK_EQ(dp_segment_alloc(owner, seg, size, &whole), DP_OK);  // one hole again
    CHECK_EQ(dp_segment_carve(owner, seg, whole, 0, nullptr, nullptr), DP_OK);  // frees it all
    CHECK_EQ(dp_segment_free_bytes(owner, "carve", &free_bytes), DP_OK);
    CHECK_EQ(free_bytes, size);
    CHECK_EQ(dp_segment_destroy(owner, "carve", 1), DP_OK);
}

}  // namespace

int main() {
    const int64_t size = 24 << 20;  // spans several 8 MiB chunks
    std::string shm = "/dev/shm/wr-dp-test-" + std::to_string(::getpid());
    dp_engine* a = nullptr;
    dp_engine* b = nullptr;
    dp_engine* a2 = nullptr;
    CHECK_EQ(dp_engine_create("node-a", "127.0.0.1", 0, 2, 2, 10000, &a), DP_OK);
    CHECK_EQ(dp_engine_create("node-b", "127.0.0.1", 0, 2, 2, 10000, &b), DP_OK);
    CHECK_EQ(dp_engine_create("node-a", "127.0.0.1", 0, 2, 2, 10000, &a2), DP_OK);
    CHECK_EQ(dp_engine_create("", "127.0.0.1", 0, 2, 2, 0, &b), DP_ERR_INVALID_ARGUMENT);
    int64_t base = 0;
    CHECK_EQ(dp_segment_create(a, "seg-a", shm.c_str(), size, DP_SEGMENT_STORE, &base), DP_OK);
    CHECK_EQ(dp_segment_create(a, "seg-a", shm.c_str(), size, DP_SEGMENT_STORE, &base),
             DP_ERR_EXISTS);

    RunTransport(a, b, "node-a", shm, size, "tcp-notify");
    RunTransport(a, a2, "node-a", shm, size, "local-notify");

    int64_t counters[DP_COUNTER_COUNT];
    CHECK_EQ(dp_engine_counters(b, counters), DP_OK);
    CHECK_EQ(counters[DP_COUNTER_TCP_WRITTEN], size);
    CHECK_EQ(counters[DP_COUNTER_TCP_READ], size);
    CHECK_EQ(counters[DP_COUNTER_LOCAL_READ], 0);
    CHECK_EQ(dp_engine_counters(a2, counters), DP_OK);
    CHECK_EQ(counters[DP_COUNTER_LOCAL_WRITTEN], size);
    CHECK_EQ(counters[DP_COUNTER_TCP_WRITTEN], 0);
    CHECK_EQ(dp_engine_counters(a, counters), DP_OK);
    CHECK_EQ(counters[DP_COUNTER_TCP_SERVED_WRITTEN], size);
    ReceiveSegmentIsNeverAllocated(a, b, a2, shm);
    CarveKeepsPiecesAndFreesTheRest(a, b, shm);

    int64_t value = 0;
    CHECK_EQ(dp_notify_wait(a, "never", 1, 10, &value), DP_ERR_TIMEOUT);

    // Peer gone: the owner goes away, the tcp client gets PEER_GONE, not a hang.
    int64_t seg = 0;
    CHECK_EQ(dp_segment_open(b, "seg-a", "node-a", "127.0.0.1", dp_engine_tcp_port(a), shm.c_str(),
                             size, &seg),
             DP_OK);
    std::vector<char> buf(1 << 20);
    CHECK_EQ(dp_memory_register(b, reinterpret_cast<int64_t>(buf.data()), 1 << 20), DP_OK);
    CHECK_EQ(dp_segment_destroy(a, "seg-a", 1), DP_OK);
    // A stale view of a destroyed own segment reads private zero pages, never faults.
    CHECK_EQ(reinterpret_cast<volatile char*>(base)[size - 1], 0);
    CHECK_EQ(dp_segment_destroy(a, "seg-a", 1), DP_ERR_UNKNOWN_SEGMENT);
    dp_engine_destroy(a);
    Batch gone;
    gone.Add(DP_OP_READ, buf.data(), seg, 0, 1 << 20);
    CHECK_EQ(gone.Run(b)[0], DP_ERR_PEER_GONE);

    dp_engine_shutdown(b);
    dp_batch* closed = nullptr;
    CHECK_EQ(dp_batch_submit(b, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &closed),
             DP_ERR_CLOSED);
    dp_engine_destroy(b);
    dp_engine_destroy(a2);
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
