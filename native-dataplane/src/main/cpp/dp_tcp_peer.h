// The client half of the tcp transport: the connections of this engine to one peer engine.
#ifndef WEIGHT_RELAY_DP_TCP_PEER_H_
#define WEIGHT_RELAY_DP_TCP_PEER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dp_batch.h"
#include "dp_internal.h"
#include "dp_wire.h"

namespace dp {

// How often a connect is retried when the peer's server is at its connection cap.
constexpr int kBusyRetries = 3;
// Requests one stream keeps in flight on its connection, and the payload bytes they may move
// together (a single larger request still goes alone): enough that the server always has the
// next request at hand (no round trip between two chunks, nor between many tensor-sized ones:
// 16 KiB ranges read 1.8 GB/s instead of 1.0 on loopback here), few enough bytes that one stream
// never takes the whole queue while another idles (a 32 MiB window measured no faster).
constexpr int kPipelineDepth = 16;
constexpr int64_t kPipelineBytes = 2 << 20;
// The request bytes (headers and names) one stream may have sent ahead of the response it reads.
// The server reads no request while it sends a READ payload, so those requests must fit in its
// socket's receive buffer (Linux gives at least 64 KiB of window), or a client blocked sending
// them and a server blocked sending to it would wait for each other.
constexpr int64_t kPipelineRequestBytes = 16 << 10;

struct TcpJob {
    std::shared_ptr<BatchState> batch;
    int32_t task;
    Op op;
    std::shared_ptr<const std::string> segment;  // one per task, shared by its chunks
    uint64_t incarnation;                        // of that segment, from its descriptor
    int64_t remote_offset;
    char* local;
    int64_t length;
    int32_t chunk = 0;
    // Sent once already on a pooled connection that broke before answering it (its server closed
    // it as idle, or restarted): it gets one more try on a fresh connection, not more.
    bool retried = false;
};

// Connections to one peer engine: a chunk queue drained by `streams` stream threads, each with
// its own connection on which it pipelines up to kPipelineDepth requests of one direction (reads
// and writes never share a window: a client blocked sending a write payload while the server is
// blocked sending it a read payload would wait forever), plus one control connection for alloc,
// free and notify.
class TcpPeer {
 public:
    TcpPeer(Engine* engine, std::string host, int port)
        : engine_(engine), host_(std::move(host)), port_(port) {}
    TcpPeer(const TcpPeer&) = delete;
    TcpPeer& operator=(const TcpPeer&) = delete;
    ~TcpPeer() { Stop(); }

    // Queues the chunks for the stream threads (started by the first call, and again after they
    // left for being idle).
    void Enqueue(std::vector<TcpJob>&& jobs);
    // No chunk queued or in flight: every stream thread has left or waits for work.
    bool Idle();
    // One request/response on the control connection (alloc, free, notify).
    Result<int64_t> Control(Op op, const std::string& name, int64_t offset, int64_t length,
                            uint64_t incarnation);
    // Takes the queued chunks of a cancelled batch out of the queue and fails them
    // (DP_ERR_CANCELLED); chunks already sent finish as they are answered.
    void Cancel(const std::shared_ptr<BatchState>& batch);
    // Whether the owner answers now (see dp_segment_probe).
    Err Probe();
    // Stops the stream threads and fails every queued chunk with kClosed. Idempotent.
    void Stop();
    // "host:port": how failures name this peer.
    std::string Endpoint() const { return host_ + ":" + std::to_string(port_); }

 private:
    // A connection that passed the handshake, and *mac ready to authenticate its requests.
    Result<Fd> Connect(RequestMac* mac);
    void FailPending();
    bool StartStreams();
    void StreamLoop(int index);
    static Err SendRequests(int fd, RequestMac* mac, const std::vector<TcpJob>& jobs,
                            std::vector<char>* buf);
    static Err ReceiveResponse(int fd, const TcpJob& job, int64_t* bytes);

    Engine* const engine_;
    const std::string host_;
    const int port_;
    // Guards jobs_, pending_fail_, threads_, fds_, left_, live_, waiting_ and stopping_; cv_ wakes
    // the stream threads.
    // A leaf lock: chunks are completed (CompleteChunk) only after it is released.
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<TcpJob> jobs_;
    std::deque<TcpJob> pending_fail_;
    std::vector<std::thread> threads_;  // one slot per stream
    std::vector<int> fds_;
    // left_[i]: stream i's thread has left (idle, or never started): Enqueue joins and restarts it.
    // A thread decides to leave and marks it under mu_ in one step, so no chunk is queued behind a
    // thread that is leaving.
    std::vector<bool> left_;
    int live_ = 0;  // stream threads that have not left
    bool stopping_ = false;
    int waiting_ = 0;  // stream threads with nothing in flight, waiting for a chunk
    // Guards control_ and keeps one control request in flight; held across its network round
    // trip (and a reconnect), never while taking another lock.
    std::mutex control_mu_;
    Fd control_;
    RequestMac control_mac_;  // control_'s requests
};

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_TCP_PEER_H_
