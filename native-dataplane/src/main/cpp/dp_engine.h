// weight-relay native data plane: the built-in Transfer Engine behind dp.h.
//
// Threads of one engine:
//  - one accept thread and one thread per inbound connection (the tcp server that moves
//    bytes between sockets and this engine's segments: the target application stays
//    passive), at most max_connections of them; each connection first passes the mutual
//    handshake (README.md, "Wire format", is the one description of the bytes on the wire);
//  - a copy pool (local transport) that splits large transfers into chunks;
//  - per tcp peer, `streams` stream threads sharing a chunk queue, each with its own
//    connection, plus one control connection for alloc/free/notify.
// Completion is signalled through a condition variable per batch; nothing spins.
//
// Locks: every mutex of the engine (Engine::seg_mu_, reg_mu_, notify_mu_, conn_mu_,
// CopyQueue::mu, BatchState::mu, TcpPeer::mu_ and control_mu_, SegmentAllocator::mu_,
// OwnSegment::fence) is a leaf:
// no code holds one while taking another, so there is no order to keep. One exception, in one
// direction only: ReapPeers asks a TcpPeer whether it is idle (TcpPeer::mu_) while it holds
// seg_mu_, so that no segment can hand the peer work between the check and its removal; nothing
// under TcpPeer::mu_ takes seg_mu_. Chunks are completed,
// batches finished and notifies sent with no lock held.
#ifndef WEIGHT_RELAY_DP_ENGINE_H_
#define WEIGHT_RELAY_DP_ENGINE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dp.h"
#include "dp_batch.h"
#include "dp_internal.h"
#include "dp_local_copy.h"
#include "dp_tcp_peer.h"
#include "dp_wire.h"

namespace dp {

// The tcp server's socket timeout when the engine was given none.
constexpr int kDefaultServerTimeoutMs = 30000;
// A handshake takes one round trip and two HMACs: a client that needs longer is not a peer. The
// deadline is absolute (from accept), not per receive, so a client dribbling a byte at a time is
// closed on time too.
constexpr int kHandshakeTimeoutMs = 5000;
// An authenticated connection without a request for this long is closed by the server, when the
// engine was given no idle timeout. Clients drop their own pooled connections after half of it.
constexpr int kDefaultIdleTimeoutMs = 60000;
// Connections still in their handshake have a cap of their own, max_connections / 4 within these
// bounds: they never take an authenticated slot, and when the cap is full the oldest of them is
// closed (an honest handshake takes one round trip, so only a peer slower than the newest
// max_handshakes connections loses its place).
constexpr int kMinHandshakes = 4;
constexpr int kMaxHandshakes = 64;

struct OwnSegment {
    std::string name;
    std::string path;
    std::unique_ptr<ShmMapping> mapping;
    std::unique_ptr<SegmentAllocator> allocator;  // zero capacity for a receive segment
    bool store = true;  // false: a transfer target only (DP_SEGMENT_RECEIVE), never allocated
    // Random, non-zero, drawn at creation and again when renewed (RenewSegment): requests name the
    // incarnation they are meant for, so one queued against an earlier segment of this name (or an
    // earlier incarnation of this one) never lands in it. Also kept in the sidecar for the peers
    // that map the file.
    std::atomic<uint64_t> incarnation{0};
    // The tcp server holds it shared from checking a WRITE's incarnation until its payload landed;
    // RenewSegment holds it exclusively while it changes the incarnation, so once it returned no
    // write addressed to the earlier incarnation is still landing through this engine's server.
    std::shared_mutex fence;

    Result<int64_t> Allocate(int64_t length, bool high = false) {
        if (!store) return Err::kSegmentFull;  // no store capacity, whatever the caller thinks
        return allocator->Allocate(length, high);
    }
};

struct PeerSegment {
    std::string name, label, host_id, host, shm_path;
    int32_t port = 0;
    int64_t size = 0;
    uint64_t incarnation = 0;             // the descriptor's; an own segment's is its own
    std::shared_ptr<OwnSegment> own;      // set when this engine owns it
    std::shared_ptr<ShmMapping> mapping;  // set for the local transport
    std::shared_ptr<TcpPeer> peer;        // owner's engine (data for tcp, control always)
    char* base() const { return own ? own->mapping->base() : mapping ? mapping->base() : nullptr; }
    // "segment 'name' (owner host:port)": how failures name it.
    std::string Describe() const {
        std::string where = own       ? "this engine's own"
                            : mapping ? "mapped from " + shm_path
                                      : "owner " + host + ":" + std::to_string(port);
        return "segment '" + name + "' (" + where + ")";
    }
};

struct EngineOptions {
    std::string label, host_id, shm_dir;  // shm_dir: its real path
    int streams = 2, threads = 2, timeout_ms = 0, connect_timeout_ms = 0, max_connections = 256,
        idle_timeout_ms = 0;
    // The role keys this engine holds (role, key); at most one per role. It proves `role`, whose
    // key it must hold to connect to anyone, and accepts connections of the roles it holds keys
    // of: a loader given only the peer key can neither act as nor accept a remover or a storer.
    std::vector<std::pair<uint8_t, Key>> keys;
    uint8_t role = DP_ROLE_PEER;
};

class Engine {
 public:
    explicit Engine(EngineOptions o)
        : label_(std::move(o.label)),
          host_id_(std::move(o.host_id)),
          shm_dir_(std::move(o.shm_dir)),
          streams_(o.streams),
          threads_(o.threads),
          timeout_ms_(o.timeout_ms),
          connect_timeout_ms_(o.connect_timeout_ms),
          max_connections_(o.max_connections),
          max_handshakes_(
              std::min(kMaxHandshakes, std::max(kMinHandshakes, o.max_connections / 4))),
          idle_timeout_ms_(o.idle_timeout_ms > 0 ? o.idle_timeout_ms : kDefaultIdleTimeoutMs),
          role_(o.role) {
        for (auto& c : counters_) c.store(0);
        for (const auto& [role, key] : o.keys) {
            if (role >= kRoles) continue;  // dp_engine_create refuses unknown roles
            keys_[role] = key;
            has_key_[role] = true;
        }
    }
    ~Engine() { Shutdown(); }

    Err Start(const std::string& host, int port);
    void Shutdown();
    int Port() const { return port_; }
    const std::string& label() const { return label_; }
    int timeout_ms() const { return timeout_ms_; }
    int connect_timeout_ms() const { return connect_timeout_ms_; }
    // How long this engine's own pooled connections (and the stream threads that hold them) may
    // idle before it drops them: half the idle timeout, so a peer with the same configuration never
    // closes one under it first.
    int client_idle_ms() const { return std::max(1, idle_timeout_ms_ / 2); }
    // Proves this engine's role to a server on a fresh connection; kOk once the server accepted,
    // with *mac ready to authenticate the connection's requests. *busy: the server was at its
    // connection cap (kPeerGone then).
    Err ClientHandshake(int fd, bool* busy, RequestMac* mac);
    int streams() const { return streams_; }
    bool closing() const { return closing_.load(); }
    void Count(int counter, int64_t bytes) { counters_[counter].fetch_add(bytes); }
    int64_t Counter(int i) const { return counters_[i].load(); }

    Result<char*> CreateSegment(const std::string& name, const std::string& path, int64_t size,
                                bool store, bool replace);
    Err DestroySegment(const std::string& name, bool unlink_file);
    // Gives an own receive segment a new incarnation (see dp_segment_renew); its memory stays.
    Result<uint64_t> RenewSegment(const std::string& name);
    // Stops what is left of a batch: its queued chunks fail with kCancelled (see dp_batch_cancel).
    void CancelBatch(const std::shared_ptr<BatchState>& b);
    std::shared_ptr<OwnSegment> FindOwn(const std::string& name) {
        std::lock_guard<std::mutex> lock(seg_mu_);
        auto it = own_.find(name);
        return it == own_.end() ? nullptr : it->second;
    }
    Err Register(int64_t addr, int64_t length);
    Err Unregister(int64_t addr);
    Err CheckLocal(int64_t addr, int64_t length);

    Result<int64_t> OpenSegment(const PeerSegment& desc);
    Err CloseSegment(int64_t id);
    // Stops and forgets the tcp peers that no open segment names and that have no chunk queued or
    // in flight: a restarted owner (its descriptor changed) leaves neither threads nor sockets.
    void ReapPeers();
    std::shared_ptr<PeerSegment> FindSegment(int64_t id) {
        std::lock_guard<std::mutex> lock(seg_mu_);
        auto it = segments_.find(id);
        return it == segments_.end() ? nullptr : it->second;
    }
    // How failures name segment id: its Describe(), or that no such segment is open.
    std::string DescribeSegment(int64_t id) {
        auto seg = FindSegment(id);
        return seg ? seg->Describe() : "segment id " + std::to_string(id) + " (not open here)";
    }
    // high: at the end of the highest hole that fits (own segments only; see SegmentAllocator).
    Result<int64_t> Alloc(int64_t id, int64_t length, bool high = false);
    Err Free(int64_t id, int64_t offset);
    Err Probe(int64_t id);
    Err Carve(int64_t id, int64_t block, int32_t count, const int64_t* starts,
              const int64_t* lengths);

    Result<std::shared_ptr<BatchState>> Submit(int32_t count, const int32_t* ops,
                                               const int64_t* addrs, const int64_t* segs,
                                               const int64_t* offsets, const int64_t* lengths,
                                               const char* notify, int32_t flags = 0);
    void CompleteChunk(const std::shared_ptr<BatchState>& b, int32_t task, Err err, int64_t bytes);
    // Copies one local chunk and completes it; never throws (a failing copy fails its tasks).
    void RunCopy(const CopyJob& job);

    void RegisterNotify(const std::string& name) {
        std::lock_guard<std::mutex> lock(notify_mu_);
        notify_.emplace(name, 0);
    }
    Err UnregisterNotify(const std::string& name) {
        size_t erased;
        {
            std::lock_guard<std::mutex> lock(notify_mu_);
            erased = notify_.erase(name);
        }
        notify_cv_.notify_all();
        return erased == 1 ? Err::kOk : Err::kNotFound;
    }
    // Counts one notify; false (nothing counted, nothing created) for a name not registered.
    bool BumpNotify(const std::string& name) {
        {
            std::lock_guard<std::mutex> lock(notify_mu_);
            auto it = notify_.find(name);
            if (it == notify_.end()) return false;
            ++it->second;
        }
        notify_cv_.notify_all();
        return true;
    }
    Result<int64_t> NotifyValue(const std::string& name) {
        std::lock_guard<std::mutex> lock(notify_mu_);
        auto it = notify_.find(name);
        if (it == notify_.end()) return Err::kNotFound;
        return it->second;
    }
    Err WaitNotify(const std::string& name, int64_t at_least, int64_t timeout_ms, int64_t* value);

 private:
    Result<int64_t> OpenSegmentOnce(const PeerSegment& desc);
    void FinishBatch(const std::shared_ptr<BatchState>& b);
    void SendNotifies(const std::shared_ptr<BatchState>& b, int32_t* status);
    void CopyLoop();
    void AcceptLoop();
    void Accept(int fd);
    struct Connection;
    void ServeConnection(const std::shared_ptr<Connection>& conn);
    bool ServerHandshake(int fd, std::chrono::steady_clock::time_point deadline, uint8_t* role,
                         RequestMac* mac);
    bool TakeAuthenticatedSlot(const std::shared_ptr<Connection>& conn);
    void ServeRequests(int fd, uint8_t role, RequestMac* mac);
    static void LogClosed(int fd, uint8_t role, uint64_t request, const char* why);
    int server_timeout_ms() const {
        return timeout_ms_ > 0 ? timeout_ms_ : kDefaultServerTimeoutMs;
    }
    std::shared_ptr<TcpPeer> PeerFor(const std::string& host, int port);

    const std::string label_;
    const std::string host_id_;
    const std::string shm_dir_;
    const int streams_;
    const int threads_;
    const int timeout_ms_;
    const int connect_timeout_ms_;
    const int max_connections_;
    const int max_handshakes_;
    const int idle_timeout_ms_;
    const uint8_t role_;
    static constexpr uint8_t kRoles = DP_ROLE_STORER + 1;
    std::array<Key, kRoles> keys_{};  // by role; set once in the constructor
    std::array<bool, kRoles> has_key_{};
    bool HasKey(uint8_t role) const { return role < kRoles && has_key_[role]; }
    std::atomic<int64_t> counters_[DP_COUNTER_COUNT];
    std::atomic<bool> closing_{false};
    std::once_flag shutdown_once_;

    // Guards own_, segments_, segment_ids_, peers_ and next_segment_id_. Held only to look up or
    // change the maps (and to make a TcpPeer, which takes no lock).
    std::mutex seg_mu_;
    std::map<std::string, std::shared_ptr<OwnSegment>> own_;
    std::map<int64_t, std::shared_ptr<PeerSegment>> segments_;
    std::map<std::string, int64_t> segment_ids_;
    std::map<std::string, std::shared_ptr<TcpPeer>> peers_;
    int64_t next_segment_id_ = 1;

    // Guards registered_ (local memory transfers may use).
    std::mutex reg_mu_;
    std::map<int64_t, int64_t> registered_;  // base -> length

    // Guards notify_; notify_cv_ wakes WaitNotify when a counter moves, is dropped or the engine
    // closes.
    std::mutex notify_mu_;
    std::condition_variable notify_cv_;
    std::unordered_map<std::string, int64_t> notify_;

    std::shared_ptr<CopyQueue> copy_ = std::make_shared<CopyQueue>();
    std::vector<std::thread> copy_threads_;

    Fd listen_fd_;
    Fd wake_fd_;
    int port_ = 0;
    std::thread accept_thread_;
    // An inbound connection of the tcp server and the thread serving it. Every field but done is
    // guarded by conn_mu_.
    struct Connection {
        std::thread thread;
        std::atomic<bool> done{false};
        int fd = -1;  // -1 once its thread stops using it (it closes it right after)
        bool authenticated = false;
        bool evicted = false;  // a handshake closed to make room for a newer one
        uint64_t seq = 0;      // order of acceptance: the oldest handshake is evicted first
    };
    // Guards conns_ and next_conn_seq_ (the tcp server's inbound connections).
    std::mutex conn_mu_;
    std::list<std::shared_ptr<Connection>> conns_;
    uint64_t next_conn_seq_ = 0;
};

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_ENGINE_H_
