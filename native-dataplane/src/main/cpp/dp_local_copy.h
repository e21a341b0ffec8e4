// The local transport: segments of this host are mapped, and a transfer is a memcpy (fused with
// the CRC32C when asked). Large transfers are split into chunks that a pool of copy threads, and
// the threads waiting for their batch, copy in parallel.
#ifndef WEIGHT_RELAY_DP_LOCAL_COPY_H_
#define WEIGHT_RELAY_DP_LOCAL_COPY_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "dp_batch.h"

namespace dp {

struct PeerSegment;

// Local transfers up to kInlineCopy run on the submitting thread; longer ones in kLocalChunk
// chunks on the copy pool.
constexpr int64_t kLocalChunk = 8 << 20;
constexpr int64_t kInlineCopy = 256 << 10;
// A chunk goes block by block, to every destination of its source bytes before the next block:
// each block of the source is read from memory once and from the core's cache for every further
// destination (the destinations are written with non-temporal stores, so they do not evict it).
constexpr int64_t kCopyBlock = 256 << 10;

// A further destination of a chunk's source bytes: another task's, at the same chunk.
struct CopyTarget {
    std::shared_ptr<PeerSegment> segment;  // keeps the mapping alive while copying
    int32_t task;
    char* dst;
};

struct CopyJob {
    std::shared_ptr<BatchState> batch;
    std::shared_ptr<PeerSegment> segment;  // keeps the mapping alive while copying
    int32_t task;
    char* dst;
    const char* src;
    int64_t length;
    int32_t chunk = 0;
    // Tasks of the same batch that copy the same source bytes elsewhere: writes only. With CRC32C
    // the source chunk is summed once, and its checksum is every target's for this chunk.
    std::vector<CopyTarget> also;
};

// The local transport's chunk queue, drained by the copy pool. Batches share it so that a
// thread waiting for its batch copies that batch's chunks itself instead of sleeping (under
// load the pool threads may not get a core). The engine's shutdown waits until no chunk is
// in flight, so a helper may use the engine while it runs a chunk.
struct CopyQueue {
    std::mutex mu;                    // guards jobs, in_flight and closing; a leaf lock
    std::condition_variable cv;       // pool threads: a job arrived or closing
    std::condition_variable idle_cv;  // shutdown: in_flight went back to 0
    std::deque<CopyJob> jobs;
    int in_flight = 0;
    bool closing = false;
};

// Test seam (the C API tests only; nothing else sets it): when set, the copy pool calls it before
// it copies a chunk, so a test can make a copy throw and check that its task fails with
// DP_ERR_INTERNAL and a message while the process goes on.
extern std::atomic<void (*)(const CopyJob&)> copy_fault_for_tests;

// Runs the waiting batch's queued local chunks on the calling thread.
void HelpCopy(const std::shared_ptr<BatchState>& b);

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_LOCAL_COPY_H_
