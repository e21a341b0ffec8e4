// The state of a submitted batch and of each of its tasks, shared by the engine that completes
// them and the transports (local copy, tcp) that move their chunks.
#ifndef WEIGHT_RELAY_DP_BATCH_H_
#define WEIGHT_RELAY_DP_BATCH_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dp.h"

namespace dp {

class Engine;
class TcpPeer;
struct CopyQueue;

struct TaskState {
    std::atomic<int32_t> chunks_left{0};
    std::atomic<int32_t> error{0};
    std::atomic<int64_t> bytes{0};
    int64_t length = 0;
    bool tcp = false;
    int32_t op = DP_OP_READ;
    int32_t final_status = DP_PENDING;  // guarded by BatchState::mu
    // With DP_BATCH_CRC32C: each chunk's CRC32C, written by the thread that moved it before it
    // completes the chunk; combined in order into crc when the last chunk completes.
    std::unique_ptr<uint32_t[]> chunk_crc;
    int64_t chunk_bytes = 0;  // every chunk's length but the last one's
    uint32_t crc = 0;         // guarded by BatchState::mu
    // What the task addressed, for the message of its failure (written before it runs).
    std::string target;  // PeerSegment::Describe(), or the unknown segment id
    int64_t offset = 0, local_addr = 0, segment_size = 0;
    std::string
        failure;  // why it failed, when its code alone cannot say; guarded by BatchState::mu
};

struct CopyQueue;

struct BatchState {
    explicit BatchState(int32_t n)
        : tasks(std::make_unique<TaskState[]>(n > 0 ? n : 1)), count(n), remaining(n) {}
    std::mutex mu;
    std::condition_variable cv;
    std::unique_ptr<TaskState[]> tasks;
    int32_t count;
    int32_t remaining;  // guarded by mu
    bool done = false;  // guarded by mu
    int32_t notify_status = DP_OK;
    std::string notify_failed;  // the owner a failed notify was sent to; guarded by mu
    std::string notify_name;
    bool notify_self = false;
    std::vector<std::shared_ptr<TcpPeer>> notify_peers;
    Engine* engine = nullptr;
    std::shared_ptr<CopyQueue> copies;  // where this batch's local chunks wait
    bool crc = false;                   // DP_BATCH_CRC32C
    // dp_batch_cancel: chunks not moved yet are dropped (DP_ERR_CANCELLED) wherever they wait.
    std::atomic<bool> cancelled{false};
    // The tcp peers its chunks were queued on (weak: a batch handle never keeps a peer from being
    // reaped), so a cancel can take its chunks out of their queues.
    std::vector<std::weak_ptr<TcpPeer>> tcp_peers;
    std::atomic<int64_t> crc_nanos{0};  // time its threads spent summing, all together

    // Records why task failed, what + detail (the first reason stays), before its failing chunk
    // completes.
    void Fail(int32_t task, const char* what, const std::string& detail) noexcept {
        try {
            std::lock_guard<std::mutex> lock(mu);
            if (tasks[task].failure.empty()) tasks[task].failure = what + detail;
        } catch (...) {  // no memory for the message: the code still says it failed
        }
    }
};

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_BATCH_H_
