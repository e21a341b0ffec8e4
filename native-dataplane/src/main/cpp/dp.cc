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
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <memory>
#include <new>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dp_crc32c.h"
#include "dp_crypto.h"
#include "dp_internal.h"

namespace dp {

// Wire protocol of the tcp transport (one request, one response, in order per connection).
constexpr uint32_t kMagic = 0x57524450;  // "WRDP"
constexpr uint32_t kMaxName = 4096;
constexpr int64_t kTcpChunk = 8 << 20;
constexpr int64_t kLocalChunk = 8 << 20;
constexpr int64_t kInlineCopy = 256 << 10;
// The longest payload one READ or WRITE request may carry: what a client ever sends. A longer
// request is malformed and its connection closed (never read into, never discarded for ages).
constexpr int64_t kMaxRequest = kTcpChunk;
constexpr int kDefaultServerTimeoutMs = 30000;
// A handshake takes one round trip and two HMACs: a client that needs longer is not a peer, and
// every second it lingers it holds one of max_connections.
constexpr int kHandshakeTimeoutMs = 5000;
constexpr int kBusyRetries = 3;

enum class Op : uint32_t { kWrite = 1, kRead = 2, kNotify = 3, kAlloc = 4, kFree = 5 };

struct ReqHeader {
    uint32_t magic;
    uint32_t op;
    int64_t offset;
    int64_t length;
    uint32_t name_len;
    uint32_t reserved;
};

struct RespHeader {
    int32_t status;
    int32_t reserved;
    int64_t value;
};

inline Err FromCode(int32_t code) { return static_cast<Err>(code); }

// The handshake that opens every connection (little-endian, as the request header).
constexpr uint32_t kHelloMagic = 0x48445257;      // "WRDH"
constexpr uint32_t kChallengeMagic = 0x43445257;  // "WRDC"
constexpr uint32_t kAckMagic = 0x41445257;        // "WRDA"
constexpr uint8_t kHandshakeVersion = 1;
constexpr size_t kNonce = 32;
constexpr size_t kMac = Sha256::kDigest;
enum : uint8_t { kChallengeOk = 0, kChallengeBusy = 1, kChallengeRefused = 2 };

struct Hello {  // client -> server
    uint32_t magic;
    uint8_t version;
    uint8_t role;  // DP_ROLE_*
    uint16_t reserved;
    uint8_t nonce[kNonce];
};

struct Challenge {  // server -> client
    uint32_t magic;
    uint8_t version;
    uint8_t status;  // kChallenge*
    uint16_t reserved;
    uint8_t nonce[kNonce];
    uint8_t mac[kMac];  // HMAC(role key, "WRDP1 server" | hello | challenge up to mac)
};

struct Proof {  // client -> server
    uint8_t mac[kMac];  // HMAC(role key, "WRDP1 client" | hello | challenge)
};

struct Ack {  // server -> client
    uint32_t magic;
    int32_t status;  // DP_OK, or DP_ERR_DENIED before the server closes
};

static_assert(sizeof(ReqHeader) == 32 && sizeof(RespHeader) == 16, "wire header sizes");
static_assert(sizeof(Hello) == 40 && sizeof(Challenge) == 72 && sizeof(Proof) == 32 &&
                  sizeof(Ack) == 8,
              "handshake sizes");

using Key = std::array<uint8_t, kMac>;

// The key a role's connections prove: HMAC(secret, label | role). Binding the role into the key
// and the transcript means a transcript of one role never passes as another.
static Key RoleKey(const std::vector<uint8_t>& secret, uint8_t role) {
    static const char kLabel[] = "weight-relay dataplane v1 role key";
    HmacSha256 h(secret.data(), secret.size());
    h.Update(kLabel, sizeof kLabel - 1);
    h.Update(&role, 1);
    Key k{};
    h.Final(k.data());
    return k;
}

static void ServerMac(const Key& key, const Hello& hello, const Challenge& c, uint8_t* out) {
    static const char kLabel[] = "WRDP1 server";
    HmacSha256 h(key.data(), key.size());
    h.Update(kLabel, sizeof kLabel - 1);
    h.Update(&hello, sizeof hello);
    h.Update(&c, offsetof(Challenge, mac));
    h.Final(out);
}

static void ClientMac(const Key& key, const Hello& hello, const Challenge& c, uint8_t* out) {
    static const char kLabel[] = "WRDP1 client";
    HmacSha256 h(key.data(), key.size());
    h.Update(kLabel, sizeof kLabel - 1);
    h.Update(&hello, sizeof hello);
    h.Update(&c, sizeof c);
    h.Final(out);
}

static bool FillRandom(uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t k = ::getrandom(p, n, 0);
        if (k < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += k;
        n -= static_cast<size_t>(k);
    }
    return true;
}

// Connects within timeout_ms (0: the system's own limit); the socket is blocking again after.
static bool ConnectWithin(int fd, const sockaddr* addr, socklen_t len, int timeout_ms) {
    int flags = ::fcntl(fd, F_GETFL, 0);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return false;
    int rc = ::connect(fd, addr, len);
    if (rc != 0) {
        if (errno != EINPROGRESS) return false;
        struct pollfd p = {fd, POLLOUT, 0};
        do {
            rc = ::poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
        } while (rc < 0 && errno == EINTR);
        if (rc <= 0) return false;
        int err = 0;
        socklen_t err_len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) return false;
    }
    return ::fcntl(fd, F_SETFL, flags) == 0;
}

class Engine;
class TcpPeer;

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
};

struct CopyQueue;

struct BatchState {
    explicit BatchState(int32_t n) : tasks(new TaskState[n > 0 ? n : 1]), count(n), remaining(n) {}
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
    std::atomic<int64_t> crc_nanos{0};  // time its threads spent summing, all together
};

struct OwnSegment {
    std::string name;
    std::string path;
    std::unique_ptr<ShmMapping> mapping;
    std::unique_ptr<SegmentAllocator> allocator;  // zero capacity for a receive segment
    bool store = true;  // false: a transfer target only (DP_SEGMENT_RECEIVE), never allocated

    Result<int64_t> Allocate(int64_t length) {
        if (!store) return Err::kSegmentFull;  // no store capacity, whatever the caller thinks
        return allocator->Allocate(length);
    }
};

struct PeerSegment {
    std::string name, label, host_id, host, shm_path;
    int32_t port = 0;
    int64_t size = 0;
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

struct CopyJob {
    std::shared_ptr<BatchState> batch;
    std::shared_ptr<PeerSegment> segment;  // keeps the mapping alive while copying
    int32_t task;
    char* dst;
    const char* src;
    int64_t length;
    int32_t chunk = 0;
};

// The local transport's chunk queue, drained by the copy pool. Batches share it so that a
// thread waiting for its batch copies that batch's chunks itself instead of sleeping (under
// load the pool threads may not get a core). The engine's shutdown waits until no chunk is
// in flight, so a helper may use the engine while it runs a chunk.
struct CopyQueue {
    std::mutex mu;
    std::condition_variable cv;       // pool threads: a job arrived or closing
    std::condition_variable idle_cv;  // shutdown: in_flight went back to 0
    std::deque<CopyJob> jobs;
    int in_flight = 0;
    bool closing = false;
};

struct TcpJob {
    std::shared_ptr<BatchState> batch;
    int32_t task;
    Op op;
    std::string segment;
    int64_t remote_offset;
    char* local;
    int64_t length;
    int32_t chunk = 0;
};

struct EngineOptions {
    std::string label, host_id, shm_dir;  // shm_dir: its real path
    int streams = 2, threads = 2, timeout_ms = 0, connect_timeout_ms = 0, max_connections = 256;
    std::vector<uint8_t> secret;
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
          authenticated_(!o.secret.empty()),
          role_(o.role),
          peer_key_(RoleKey(o.secret, DP_ROLE_PEER)),
          remover_key_(RoleKey(o.secret, DP_ROLE_REMOVER)),
          storer_key_(RoleKey(o.secret, DP_ROLE_STORER)) {
        for (auto& c : counters_) c.store(0);
    }
    ~Engine() { Shutdown(); }

    Err Start(const std::string& host, int port);
    void Shutdown();
    int Port() const { return port_; }
    const std::string& label() const { return label_; }
    int timeout_ms() const { return timeout_ms_; }
    int connect_timeout_ms() const { return connect_timeout_ms_; }
    // Proves this engine's role to a server on a fresh connection; kOk once the server accepted.
    // *busy: the server was at its connection cap (kPeerGone then).
    Err ClientHandshake(int fd, bool* busy);
    int streams() const { return streams_; }
    bool closing() const { return closing_.load(); }
    void Count(int counter, int64_t bytes) { counters_[counter].fetch_add(bytes); }
    int64_t Counter(int i) const { return counters_[i].load(); }

    Result<char*> CreateSegment(const std::string& name, const std::string& path, int64_t size,
                                bool store, bool replace);
    Err DestroySegment(const std::string& name, bool unlink_file);
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
    Result<int64_t> Alloc(int64_t id, int64_t length);
    Err Free(int64_t id, int64_t offset);
    Err Probe(int64_t id);
    Err Carve(int64_t id, int64_t block, int32_t count, const int64_t* starts,
              const int64_t* lengths);

    Result<std::shared_ptr<BatchState>> Submit(int32_t count, const int32_t* ops,
                                               const int64_t* addrs, const int64_t* segs,
                                               const int64_t* offsets, const int64_t* lengths,
                                               const char* notify, int32_t flags = 0);
    void CompleteChunk(const std::shared_ptr<BatchState>& b, int32_t task, Err err, int64_t bytes);
    // Copies one local chunk and completes it.
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
    void FinishBatch(const std::shared_ptr<BatchState>& b);
    void CopyLoop();
    void AcceptLoop();
    void Accept(int fd);
    void ServeConnection(int fd);
    bool ServerHandshake(int fd, uint8_t* role);
    void ServeRequests(int fd, uint8_t role);
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
    const bool authenticated_;  // false: no secret, so no tcp peer in either direction
    const uint8_t role_;
    const Key peer_key_;
    const Key remover_key_;
    const Key storer_key_;

    const Key& KeyOf(uint8_t role) const {
        return role == DP_ROLE_REMOVER ? remover_key_
                                       : (role == DP_ROLE_STORER ? storer_key_ : peer_key_);
    }
    std::atomic<int64_t> counters_[DP_COUNTER_COUNT];
    std::atomic<bool> closing_{false};
    std::once_flag shutdown_once_;

    std::mutex seg_mu_;
    std::map<std::string, std::shared_ptr<OwnSegment>> own_;
    std::map<int64_t, std::shared_ptr<PeerSegment>> segments_;
    std::map<std::string, int64_t> segment_ids_;
    std::map<std::string, std::shared_ptr<TcpPeer>> peers_;
    int64_t next_segment_id_ = 1;

    std::mutex reg_mu_;
    std::map<int64_t, int64_t> registered_;  // base -> length

    std::mutex notify_mu_;
    std::condition_variable notify_cv_;
    std::unordered_map<std::string, int64_t> notify_;

    std::shared_ptr<CopyQueue> copy_ = std::make_shared<CopyQueue>();
    std::vector<std::thread> copy_threads_;

    Fd listen_fd_;
    Fd wake_fd_;
    int port_ = 0;
    std::thread accept_thread_;
    std::mutex conn_mu_;
    std::set<int> conn_fds_;
    struct Connection {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::list<Connection> conn_threads_;
};

// Connections to one peer engine: a chunk queue drained by `streams` threads.
class TcpPeer {
 public:
    TcpPeer(Engine* engine, std::string host, int port)
        : engine_(engine), host_(std::move(host)), port_(port) {}
    ~TcpPeer() { Stop(); }

    void Enqueue(std::vector<TcpJob>&& jobs) {
        std::vector<TcpJob> unstarted;  // no stream thread could be created
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_) {
                for (auto& j : jobs) pending_fail_.push_back(std::move(j));
            } else {
                if (threads_.empty()) {
                    fds_.assign(engine_->streams(), -1);
                    threads_.reserve(engine_->streams());
                    for (int i = 0; i < engine_->streams(); ++i) {
                        try {
                            threads_.emplace_back([this, i] {
                                try {
                                    StreamLoop(i);
                                } catch (...) {  // never std::terminate the JVM
                                }
                            });
                        } catch (const std::system_error&) {
                            break;  // no more threads now: run with the streams that started
                        }
                    }
                }
                if (threads_.empty()) {
                    for (auto& j : jobs) unstarted.push_back(std::move(j));
                } else {
                    for (auto& j : jobs) jobs_.push_back(std::move(j));
                }
            }
        }
        cv_.notify_all();
        for (auto& j : unstarted) engine_->CompleteChunk(j.batch, j.task, Err::kInternal, 0);
        FailPending();
    }

    // One request/response on the control connection (alloc, free, notify).
    Result<int64_t> Control(Op op, const std::string& name, int64_t offset, int64_t length) {
        std::lock_guard<std::mutex> lock(control_mu_);
        if (engine_->closing()) return Err::kClosed;
        for (int attempt = 0; attempt < 2; ++attempt) {
            if (!control_.valid()) {
                auto fd = Connect();
                if (!fd.ok()) return fd.error();
                control_ = Fd(fd.value());
            }
            RespHeader resp{};
            Err e = Request(control_.get(), op, name, offset, length);
            if (e == Err::kOk) e = RecvAll(control_.get(), &resp, sizeof resp);
            if (e == Err::kOk) {
                if (resp.status != DP_OK) return FromCode(resp.status);
                return resp.value;
            }
            control_.Reset();  // a stale pooled connection gets one fresh retry
        }
        return Err::kPeerGone;
    }

    // Whether the owner answers now: the idle control connection is checked for a hang-up
    // without waiting, and a fresh one (connect + handshake, bounded by the connect timeout) is
    // made when there is none or it was closed. The connection stays for later control calls.
    Err Probe() {
        std::lock_guard<std::mutex> lock(control_mu_);
        if (engine_->closing()) return Err::kClosed;
        if (control_.valid()) {
            struct pollfd p {};
            p.fd = control_.get();
            p.events = POLLIN | POLLRDHUP;
            if (::poll(&p, 1, 0) == 0) return Err::kOk;  // open and quiet: a live peer
            control_.Reset();  // hung up, errored or sent unasked bytes: start afresh
        }
        auto fd = Connect();
        if (!fd.ok()) return fd.error();
        control_ = Fd(fd.value());
        return Err::kOk;
    }

    void Stop() {
        std::vector<std::thread> threads;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_ && threads_.empty()) return;
            stopping_ = true;
            for (int fd : fds_)
                if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
            threads.swap(threads_);
        }
        {
            std::lock_guard<std::mutex> lock(control_mu_);
            control_.Reset();
        }
        cv_.notify_all();
        for (auto& t : threads) t.join();
        FailPending();
    }

    static Err Request(int fd, Op op, const std::string& name, int64_t offset, int64_t length) {
        char buf[sizeof(ReqHeader) + kMaxName];
        ReqHeader h{kMagic, static_cast<uint32_t>(op),          offset,
                    length, static_cast<uint32_t>(name.size()), 0};
        std::memcpy(buf, &h, sizeof h);
        std::memcpy(buf + sizeof h, name.data(), name.size());
        return SendAll(fd, buf, static_cast<int64_t>(sizeof h + name.size()));
    }

 private:
    // Resolves the peer (host name, IPv4 or IPv6), connects to the first address that answers
    // within the connect timeout and passes the handshake. kDenied when the peer refuses our
    // proof or fails its own: no other address of it is tried then.
    Result<int> Connect() {
        struct addrinfo hints {};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        struct addrinfo* res = nullptr;
        std::string port = std::to_string(port_);
        if (::getaddrinfo(host_.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr)
            return Err::kPeerGone;
        Err result = Err::kPeerGone;
        for (struct addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
            bool busy = false;
            for (int attempt = 0; attempt <= kBusyRetries && !engine_->closing(); ++attempt) {
                if (busy) std::this_thread::sleep_for(std::chrono::milliseconds(20 << attempt));
                Fd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
                if (!fd.valid() || !ConnectWithin(fd.get(), ai->ai_addr, ai->ai_addrlen,
                                                  engine_->connect_timeout_ms()))
                    break;
                TuneSocket(fd.get(), engine_->timeout_ms());
                busy = false;
                result = engine_->ClientHandshake(fd.get(), &busy);
                if (result == Err::kOk) {
                    ::freeaddrinfo(res);
                    return fd.Release();
                }
                if (!busy) break;  // a cap is worth a short wait; anything else is not
            }
            if (result == Err::kDenied || result == Err::kInternal) break;
        }
        ::freeaddrinfo(res);
        return result;
    }

    void FailPending() {
        std::deque<TcpJob> fail;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (!stopping_) return;
            fail.swap(pending_fail_);
            if (threads_.empty()) {
                for (auto& j : jobs_) fail.push_back(std::move(j));
                jobs_.clear();
            }
        }
        for (auto& j : fail) engine_->CompleteChunk(j.batch, j.task, Err::kClosed, 0);
    }

    void StreamLoop(int index) {
        Fd fd;
        for (;;) {
            TcpJob job;
            {
                std::unique_lock<std::mutex> lock(mu_);
                cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
                if (jobs_.empty()) break;
                job = std::move(jobs_.front());
                jobs_.pop_front();
                if (stopping_) {
                    lock.unlock();
                    engine_->CompleteChunk(job.batch, job.task, Err::kClosed, 0);
                    continue;
                }
            }
            if (!fd.valid()) {
                auto c = Connect();
                if (!c.ok()) {
                    engine_->CompleteChunk(job.batch, job.task, c.error(), 0);
                    continue;
                }
                fd = Fd(c.value());
                std::lock_guard<std::mutex> lock(mu_);
                fds_[index] = fd.get();
                if (stopping_) ::shutdown(fd.get(), SHUT_RDWR);
            }
            int64_t bytes = 0;
            Err e = Run(fd.get(), job, &bytes);
            if (e == Err::kPeerGone) {
                std::lock_guard<std::mutex> lock(mu_);
                fds_[index] = -1;
                fd.Reset();
            }
            if (bytes > 0)
                engine_->Count(job.op == Op::kRead ? DP_COUNTER_TCP_READ : DP_COUNTER_TCP_WRITTEN,
                               bytes);
            engine_->CompleteChunk(job.batch, job.task, e, bytes);
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (index < static_cast<int>(fds_.size())) fds_[index] = -1;
    }

    static Err Run(int fd, const TcpJob& job, int64_t* bytes) {
        Err e = Request(fd, job.op, job.segment, job.remote_offset, job.length);
        if (e != Err::kOk) return e;
        RespHeader resp{};
        if (job.op == Op::kWrite) {
            TaskState& w = job.batch->tasks[job.task];
            if (w.chunk_crc) {
                int64_t t0 = Crc32cNow();
                w.chunk_crc[job.chunk] = Crc32cUpdate(0, job.local, job.length);
                job.batch->crc_nanos.fetch_add(Crc32cNow() - t0);
            }
            if ((e = SendAll(fd, job.local, job.length)) != Err::kOk) return e;
            if ((e = RecvAll(fd, &resp, sizeof resp)) != Err::kOk) return e;
            if (resp.status != DP_OK) return FromCode(resp.status);
            *bytes = job.length;
            return Err::kOk;
        }
        if ((e = RecvAll(fd, &resp, sizeof resp)) != Err::kOk) return e;
        if (resp.status != DP_OK) return FromCode(resp.status);
        TaskState& t = job.batch->tasks[job.task];
        if (t.chunk_crc) {
            uint32_t crc = 0;
            int64_t spent = 0;
            e = RecvAllCrc32c(fd, job.local, job.length, &crc, &spent);
            job.batch->crc_nanos.fetch_add(spent);
            if (e != Err::kOk) return e;
            t.chunk_crc[job.chunk] = crc;
        } else if ((e = RecvAll(fd, job.local, job.length)) != Err::kOk) {
            return e;
        }
        *bytes = job.length;
        return Err::kOk;
    }

    Engine* engine_;

 public:
    std::string Endpoint() const { return host_ + ":" + std::to_string(port_); }

 private:
    const std::string host_;
    const int port_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<TcpJob> jobs_;
    std::deque<TcpJob> pending_fail_;
    std::vector<std::thread> threads_;
    std::vector<int> fds_;
    bool stopping_ = false;
    std::mutex control_mu_;
    Fd control_;
};

Err Engine::Start(const std::string& host, int port) {
    if (host.empty()) return Err::kInvalidArgument;
    struct addrinfo hints {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    struct addrinfo* res = nullptr;
    std::string service = std::to_string(port);
    if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || res == nullptr)
        return Err::kInvalidArgument;  // not an address and no name that resolves
    Err err = Err::kIo;
    for (struct addrinfo* ai = res; ai != nullptr && !listen_fd_.valid(); ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd.valid()) continue;
        int one = 1;
        ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), 128) != 0)
            continue;
        listen_fd_ = std::move(fd);
        err = Err::kOk;
    }
    ::freeaddrinfo(res);
    if (err != Err::kOk) return err;
    struct sockaddr_storage addr {};
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = addr.ss_family == AF_INET6
                ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    wake_fd_ = Fd(::eventfd(0, EFD_CLOEXEC));
    if (!wake_fd_.valid()) return Err::kIo;
    accept_thread_ = std::thread([this] { AcceptLoop(); });
    for (int i = 0; i < threads_; ++i) copy_threads_.emplace_back([this] { CopyLoop(); });
    return Err::kOk;
}

void Engine::Shutdown() {
    std::call_once(shutdown_once_, [this] {
        closing_.store(true);
        { std::lock_guard<std::mutex> lock(notify_mu_); }
        notify_cv_.notify_all();
        if (wake_fd_.valid()) {
            uint64_t one = 1;
            ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof one);
            (void)ignored;
        }
        if (accept_thread_.joinable()) accept_thread_.join();
        std::list<Connection> conns;
        {
            std::lock_guard<std::mutex> lock(conn_mu_);
            for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
            conns.swap(conn_threads_);
        }
        for (auto& c : conns) c.thread.join();
        std::map<std::string, std::shared_ptr<TcpPeer>> peers;
        {
            std::lock_guard<std::mutex> lock(seg_mu_);
            peers = peers_;
        }
        for (auto& p : peers) p.second->Stop();
        {
            std::lock_guard<std::mutex> lock(copy_->mu);
            copy_->closing = true;
        }
        copy_->cv.notify_all();
        for (auto& t : copy_threads_) t.join();
        copy_threads_.clear();
        {
            std::unique_lock<std::mutex> lock(copy_->mu);
            copy_->idle_cv.wait(lock, [&] { return copy_->jobs.empty() && copy_->in_flight == 0; });
        }
        std::lock_guard<std::mutex> lock(seg_mu_);
        segments_.clear();
        segment_ids_.clear();
        peers_.clear();
        own_.clear();
    });
}

Result<char*> Engine::CreateSegment(const std::string& name, const std::string& path, int64_t size,
                                    bool store, bool replace) {
    if (name.empty() || name.size() > kMaxName || path.empty() || size <= 0 ||
        !InsideDir(shm_dir_, path))
        return Err::kInvalidArgument;
    {
        std::lock_guard<std::mutex> lock(seg_mu_);
        if (own_.count(name) != 0) return Err::kExists;
    }
    auto mapping = ShmMapping::Create(path, size, replace);
    if (!mapping.ok()) return mapping.error();
    auto seg = std::make_shared<OwnSegment>();
    seg->name = name;
    seg->path = path;
    seg->mapping.reset(mapping.value());
    seg->mapping->DetachOnRelease();
    seg->store = store;
    seg->allocator = std::make_unique<SegmentAllocator>(store ? size : 0);
    char* base = seg->mapping->base();
    {
        std::lock_guard<std::mutex> lock(seg_mu_);
        if (own_.count(name) != 0) return Err::kExists;
        own_[name] = seg;
    }
    Register(reinterpret_cast<int64_t>(base), size);
    return base;
}

Err Engine::DestroySegment(const std::string& name, bool unlink_file) {
    std::shared_ptr<OwnSegment> seg;
    {
        std::lock_guard<std::mutex> lock(seg_mu_);
        auto it = own_.find(name);
        if (it == own_.end()) return Err::kUnknownSegment;
        seg = it->second;
        own_.erase(it);
        auto id = segment_ids_.find(name);
        if (id != segment_ids_.end()) {
            segments_.erase(id->second);
            segment_ids_.erase(id);
        }
    }
    Unregister(reinterpret_cast<int64_t>(seg->mapping->base()));
    if (unlink_file) ::unlink(seg->path.c_str());
    return Err::kOk;
}

Err Engine::Register(int64_t addr, int64_t length) {
    if (addr <= 0 || length <= 0 || addr > INT64_MAX - length) return Err::kInvalidArgument;
    std::lock_guard<std::mutex> lock(reg_mu_);
    auto next = registered_.lower_bound(addr);
    if (next != registered_.end() && next->first < addr + length) return Err::kExists;
    if (next != registered_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second > addr) return Err::kExists;
    }
    registered_[addr] = length;
    return Err::kOk;
}

Err Engine::Unregister(int64_t addr) {
    std::lock_guard<std::mutex> lock(reg_mu_);
    return registered_.erase(addr) == 1 ? Err::kOk : Err::kUnregisteredBuffer;
}

Err Engine::CheckLocal(int64_t addr, int64_t length) {
    if (addr <= 0 || length < 0 || addr > INT64_MAX - length) return Err::kUnregisteredBuffer;
    std::lock_guard<std::mutex> lock(reg_mu_);
    auto it = registered_.upper_bound(addr);
    if (it == registered_.begin()) return Err::kUnregisteredBuffer;
    --it;
    if (addr >= it->first + it->second) return Err::kUnregisteredBuffer;
    // Starts inside a registered region but runs past its end.
    return addr + length <= it->first + it->second ? Err::kOk : Err::kOutOfBounds;
}

std::shared_ptr<TcpPeer> Engine::PeerFor(const std::string& host, int port) {
    if (closing()) return nullptr;  // Shutdown has collected the peers it stops
    std::string key = host + ":" + std::to_string(port);
    auto& peer = peers_[key];
    if (!peer) peer = std::make_shared<TcpPeer>(this, host, port);
    return peer;
}

static bool SameDescriptor(const PeerSegment& a, const PeerSegment& b) {
    return a.host == b.host && a.port == b.port && a.size == b.size && a.label == b.label &&
           a.host_id == b.host_id && a.shm_path == b.shm_path;
}

Result<int64_t> Engine::OpenSegment(const PeerSegment& desc) {
    if (desc.name.empty() || desc.name.size() > kMaxName || desc.size < 0 || desc.port < 0 ||
        desc.port > 65535)
        return Err::kInvalidArgument;
    if (closing()) return Err::kClosed;
    std::shared_ptr<OwnSegment> own = FindOwn(desc.name);
    {
        std::lock_guard<std::mutex> lock(seg_mu_);
        auto id = segment_ids_.find(desc.name);
        if (id != segment_ids_.end() && SameDescriptor(*segments_[id->second], desc))
            return id->second;
    }
    auto seg = std::make_shared<PeerSegment>(desc);
    if (own) {
        seg->own = own;
        seg->size = own->mapping->size();
    } else {
        if (desc.label == label_) {
            // Same label on another host: mapping "its" path here would map some other file.
            if (desc.host_id != host_id_) return Err::kForeignHost;
            if (!InsideDir(shm_dir_, desc.shm_path)) return Err::kUnknownSegment;
            auto m = ShmMapping::Open(desc.shm_path, desc.size);
            if (!m.ok()) return m.error();
            seg->mapping.reset(m.value());
        }
    }
    std::lock_guard<std::mutex> lock(seg_mu_);
    auto old = segment_ids_.find(desc.name);
    if (old != segment_ids_.end()) {
        if (SameDescriptor(*segments_[old->second], desc)) return old->second;  // lost a race
        segments_.erase(old->second);
    }
    if (!own) {
        seg->peer = PeerFor(desc.host, desc.port);
        if (!seg->peer) return Err::kClosed;
    }
    int64_t id = next_segment_id_++;
    segments_[id] = seg;
    segment_ids_[desc.name] = id;
    return id;
}

Err Engine::CloseSegment(int64_t id) {
    std::lock_guard<std::mutex> lock(seg_mu_);
    auto it = segments_.find(id);
    if (it == segments_.end()) return Err::kUnknownSegment;
    segment_ids_.erase(it->second->name);
    segments_.erase(it);
    return Err::kOk;
}

Result<int64_t> Engine::Alloc(int64_t id, int64_t length) {
    if (closing()) return Err::kClosed;
    auto seg = FindSegment(id);
    if (!seg) return Err::kUnknownSegment;
    if (length <= 0) return Err::kInvalidArgument;
    if (seg->own) return seg->own->Allocate(length);
    // A peer's segment: its owner allocates there on a storer's request, and refuses others.
    if (role_ != DP_ROLE_STORER) return Err::kDenied;
    return seg->peer->Control(Op::kAlloc, seg->name, 0, length);
}

Err Engine::Probe(int64_t id) {
    if (closing()) return Err::kClosed;
    auto seg = FindSegment(id);
    if (!seg) return Err::kUnknownSegment;
    if (seg->own || seg->mapping) return Err::kOk;  // bytes are in a file here, owner or not
    return seg->peer->Probe();
}

Err Engine::Free(int64_t id, int64_t offset) {
    if (closing()) return Err::kClosed;
    auto seg = FindSegment(id);
    if (!seg) return Err::kUnknownSegment;
    if (seg->own) return seg->own->allocator->Free(offset);
    auto r = seg->peer->Control(Op::kFree, seg->name, offset, 0);
    return r.ok() ? Err::kOk : r.error();
}

Err Engine::Carve(int64_t id, int64_t block, int32_t count, const int64_t* starts,
                  const int64_t* lengths) {
    if (closing()) return Err::kClosed;
    auto seg = FindSegment(id);
    if (!seg) return Err::kUnknownSegment;
    if (!seg->own) return Err::kInvalidArgument;  // only the owner carves its allocations
    return seg->own->allocator->Carve(block, count, starts, lengths);
}

Result<std::shared_ptr<BatchState>> Engine::Submit(int32_t count, const int32_t* ops,
                                                   const int64_t* addrs, const int64_t* segs,
                                                   const int64_t* offsets, const int64_t* lengths,
                                                   const char* notify, int32_t flags) {
    if (closing()) return Err::kClosed;
    if ((flags & ~DP_BATCH_CRC32C) != 0) return Err::kInvalidArgument;
    if (count < 0 || (count > 0 && (!ops || !addrs || !segs || !offsets || !lengths)))
        return Err::kInvalidArgument;
    if (notify != nullptr && (std::strlen(notify) == 0 || std::strlen(notify) > kMaxName))
        return Err::kInvalidArgument;
    auto b = std::make_shared<BatchState>(count);
    b->engine = this;
    b->copies = copy_;
    b->crc = (flags & DP_BATCH_CRC32C) != 0;
    if (notify != nullptr) b->notify_name = notify;
    std::vector<std::shared_ptr<PeerSegment>> seg(count);
    std::vector<Err> pre(count, Err::kOk);
    for (int32_t i = 0; i < count; ++i) {
        TaskState& t = b->tasks[i];
        t.length = lengths[i];
        t.op = ops[i];
        t.offset = offsets[i];
        t.local_addr = addrs[i];
        if (ops[i] != DP_OP_READ && ops[i] != DP_OP_WRITE) {
            pre[i] = Err::kInvalidArgument;
        } else if (lengths[i] < 0 || offsets[i] < 0) {
            pre[i] = Err::kInvalidArgument;
        } else if (!(seg[i] = FindSegment(segs[i])) ||
                   (seg[i]->mapping && seg[i]->mapping->Unlinked())) {
            pre[i] = Err::kUnknownSegment;
        } else if (!InBounds(offsets[i], lengths[i], t.segment_size = seg[i]->size)) {
            pre[i] = Err::kOutOfBounds;
        } else {
            pre[i] = CheckLocal(addrs[i], lengths[i]);
        }
        t.target = seg[i] ? seg[i]->Describe() : "segment id " + std::to_string(segs[i]);
        if (pre[i] == Err::kOk && ops[i] == DP_OP_WRITE && !b->notify_name.empty()) {
            if (seg[i]->own) {
                b->notify_self = true;
            } else {
                bool seen = false;
                for (auto& p : b->notify_peers) seen |= p == seg[i]->peer;
                if (!seen) b->notify_peers.push_back(seg[i]->peer);
            }
        }
    }
    if (count == 0) {
        FinishBatch(b);
        return b;
    }
    std::vector<CopyJob> copies;
    std::map<TcpPeer*, std::vector<TcpJob>> remote;
    for (int32_t i = 0; i < count; ++i) {
        TaskState& t = b->tasks[i];
        if (pre[i] != Err::kOk || lengths[i] == 0) {
            t.chunks_left.store(1);
            if (b->crc) t.chunk_crc.reset(new uint32_t[1]{0});
            CompleteChunk(b, i, pre[i], 0);
            continue;
        }
        char* local = reinterpret_cast<char*>(addrs[i]);
        int64_t len = lengths[i];
        char* base = seg[i]->base();
        if (base != nullptr) {
            char* remote_ptr = base + offsets[i];
            char* dst = ops[i] == DP_OP_READ ? local : remote_ptr;
            const char* src = ops[i] == DP_OP_READ ? remote_ptr : local;
            if (len <= kInlineCopy) {
                t.chunks_left.store(1);
                if (b->crc) {
                    int64_t spent = 0;
                    t.chunk_crc.reset(new uint32_t[1]{CopyCrc32c(dst, src, len, &spent)});
                    b->crc_nanos.fetch_add(spent);
                } else {
                    std::memcpy(dst, src, static_cast<size_t>(len));
                }
                Count(ops[i] == DP_OP_READ ? DP_COUNTER_LOCAL_READ : DP_COUNTER_LOCAL_WRITTEN, len);
                CompleteChunk(b, i, Err::kOk, len);
                continue;
            }
            int64_t chunks = (len + kLocalChunk - 1) / kLocalChunk;
            t.chunks_left.store(static_cast<int32_t>(chunks));
            if (b->crc) t.chunk_crc.reset(new uint32_t[chunks]());
            t.chunk_bytes = kLocalChunk;
            int32_t chunk = 0;
            for (int64_t off = 0; off < len; off += kLocalChunk) {
                int64_t n = std::min(kLocalChunk, len - off);
                copies.push_back(CopyJob{b, seg[i], i, dst + off, src + off, n, chunk++});
            }
        } else {
            t.tcp = true;
            int64_t chunks = (len + kTcpChunk - 1) / kTcpChunk;
            t.chunks_left.store(static_cast<int32_t>(chunks));
            if (b->crc) t.chunk_crc.reset(new uint32_t[chunks]());
            t.chunk_bytes = kTcpChunk;
            auto& jobs = remote[seg[i]->peer.get()];
            int32_t chunk = 0;
            for (int64_t off = 0; off < len; off += kTcpChunk) {
                int64_t n = std::min(kTcpChunk, len - off);
                jobs.push_back(TcpJob{b, i, ops[i] == DP_OP_READ ? Op::kRead : Op::kWrite,
                                      seg[i]->name, offsets[i] + off, local + off, n, chunk++});
            }
        }
    }
    if (!copies.empty()) {
        bool closed;
        {
            std::lock_guard<std::mutex> lock(copy_->mu);
            closed = copy_->closing;
            if (!closed)
                for (auto& c : copies) copy_->jobs.push_back(std::move(c));
        }
        if (closed) {
            for (auto& c : copies) CompleteChunk(c.batch, c.task, Err::kClosed, 0);
        } else {
            copy_->cv.notify_all();
        }
    }
    for (auto& r : remote) r.first->Enqueue(std::move(r.second));
    return b;
}

void Engine::CompleteChunk(const std::shared_ptr<BatchState>& b, int32_t task, Err err,
                           int64_t bytes) {
    TaskState& t = b->tasks[task];
    if (bytes > 0) t.bytes.fetch_add(bytes);
    if (err != Err::kOk) {
        int32_t expected = 0;
        t.error.compare_exchange_strong(expected, Code(err));
    }
    if (t.chunks_left.fetch_sub(1) != 1) return;
    int32_t status = t.error.load();
    if (status == DP_OK && t.bytes.load() != t.length) status = DP_ERR_SHORT_TRANSFER;
    uint32_t crc = 0;
    if (b->crc && status == DP_OK && t.chunk_crc) {
        // chunks in order: every one but the last is chunk_bytes long
        int64_t chunks = t.chunk_bytes > 0 ? (t.length + t.chunk_bytes - 1) / t.chunk_bytes : 1;
        crc = t.chunk_crc[0];
        for (int64_t k = 1; k < chunks; ++k) {
            int64_t n = std::min(t.chunk_bytes, t.length - k * t.chunk_bytes);
            crc = Crc32cCombine(crc, t.chunk_crc[k], n);
        }
    }
    bool last;
    {
        std::lock_guard<std::mutex> lock(b->mu);
        t.final_status = status;
        t.crc = crc;
        last = --b->remaining == 0;
    }
    if (last) FinishBatch(b);
}

void Engine::FinishBatch(const std::shared_ptr<BatchState>& b) {
    int32_t notify_status = DP_OK;
    if (!b->notify_name.empty()) {
        for (int32_t i = 0; i < b->count && notify_status == DP_OK; ++i) {
            std::lock_guard<std::mutex> lock(b->mu);
            notify_status = b->tasks[i].final_status;
        }
        if (notify_status == DP_OK) {
            if (b->notify_self) BumpNotify(b->notify_name);  // dropped unless registered
            for (auto& p : b->notify_peers) {
                auto r = p->Control(Op::kNotify, b->notify_name, 0, 0);
                if (!r.ok() && notify_status == DP_OK) {
                    notify_status = Code(r.error());
                    std::lock_guard<std::mutex> lock(b->mu);
                    b->notify_failed = p->Endpoint();
                }
            }
        }
    }
    {
        std::lock_guard<std::mutex> lock(b->mu);
        b->notify_status = notify_status;
        b->done = true;
        b->notify_peers.clear();
    }
    b->cv.notify_all();
}

void Engine::RunCopy(const CopyJob& job) {
    TaskState& t = job.batch->tasks[job.task];
    if (t.chunk_crc) {
        int64_t spent = 0;
        t.chunk_crc[job.chunk] = CopyCrc32c(job.dst, job.src, job.length, &spent);
        job.batch->crc_nanos.fetch_add(spent);
    } else {
        std::memcpy(job.dst, job.src, static_cast<size_t>(job.length));
    }
    Count(job.batch->tasks[job.task].op == DP_OP_READ ? DP_COUNTER_LOCAL_READ
                                                      : DP_COUNTER_LOCAL_WRITTEN,
          job.length);
    CompleteChunk(job.batch, job.task, Err::kOk, job.length);
}

void Engine::CopyLoop() {
    CopyQueue& q = *copy_;
    for (;;) {
        CopyJob job;
        {
            std::unique_lock<std::mutex> lock(q.mu);
            q.cv.wait(lock, [&] { return q.closing || !q.jobs.empty(); });
            if (q.jobs.empty()) return;
            job = std::move(q.jobs.front());
            q.jobs.pop_front();
            ++q.in_flight;
        }
        RunCopy(job);
        job = CopyJob{};
        {
            std::lock_guard<std::mutex> lock(q.mu);
            --q.in_flight;
        }
        q.idle_cv.notify_all();
    }
}

// Runs the waiting batch's queued local chunks on the calling thread.
static void HelpCopy(const std::shared_ptr<BatchState>& b) {
    if (!b->copies) return;
    CopyQueue& q = *b->copies;
    for (;;) {
        CopyJob job;
        {
            std::lock_guard<std::mutex> lock(q.mu);
            auto it = std::find_if(q.jobs.begin(), q.jobs.end(),
                                   [&](const CopyJob& j) { return j.batch == b; });
            if (it == q.jobs.end()) return;
            job = std::move(*it);
            q.jobs.erase(it);
            ++q.in_flight;
        }
        b->engine->RunCopy(job);  // the engine cannot finish shutting down meanwhile
        job = CopyJob{};
        {
            std::lock_guard<std::mutex> lock(q.mu);
            --q.in_flight;
        }
        q.idle_cv.notify_all();
    }
}

void Engine::AcceptLoop() {
    for (;;) {
        struct pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
        int rc = ::poll(fds, 2, -1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0 || (fds[1].revents & POLLIN) || closing()) return;
        if (!(fds[0].revents & POLLIN)) continue;
        int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                // Out of descriptors or memory: the listener stays readable, so back off instead
                // of spinning; the pending connection waits in the backlog meanwhile.
                struct pollfd wake = {wake_fd_.get(), POLLIN, 0};
                ::poll(&wake, 1, 100);
            }
            continue;
        }
        try {
            Accept(fd);
        } catch (...) {  // out of memory before the connection was taken on: drop it
            ::close(fd);
        }
        if (closing()) return;
    }
}

// Hands an accepted connection to a thread of its own, or refuses it at once (cap reached, no
// thread to be had): the client reads a "busy" challenge or EOF, never a hang.
void Engine::Accept(int fd) {
    std::lock_guard<std::mutex> lock(conn_mu_);
    if (closing()) {
        ::close(fd);
        return;
    }
    for (auto it = conn_threads_.begin(); it != conn_threads_.end();) {
        if (it->done->load()) {
            it->thread.join();
            it = conn_threads_.erase(it);
        } else {
            ++it;
        }
    }
    if (static_cast<int>(conn_fds_.size()) >= max_connections_) {
        Challenge busy{kChallengeMagic, kHandshakeVersion, kChallengeBusy, 0, {}, {}};
        ssize_t ignored = ::send(fd, &busy, sizeof busy, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)ignored;
        ::close(fd);
        return;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    conn_threads_.push_back(Connection{std::thread(), done});
    try {
        conn_fds_.insert(fd);
        conn_threads_.back().thread = std::thread([this, fd, done] {
            try {
                ServeConnection(fd);
            } catch (...) {  // never std::terminate the JVM; the fd is closed by then
            }
            done->store(true);
        });
    } catch (...) {  // no thread (or no memory) to be had: refuse this one
        conn_threads_.pop_back();
        conn_fds_.erase(fd);
        ::close(fd);
    }
}

Err Engine::ClientHandshake(int fd, bool* busy) {
    if (!authenticated_) return Err::kDenied;  // no secret: we talk to nobody over tcp
    Hello hello{kHelloMagic, kHandshakeVersion, role_, 0, {}};
    if (!FillRandom(hello.nonce, kNonce)) return Err::kInternal;
    Err e = SendAll(fd, &hello, sizeof hello);
    Challenge c{};
    if (e == Err::kOk) e = RecvAll(fd, &c, sizeof c);
    if (e != Err::kOk) return e;
    if (c.magic != kChallengeMagic || c.version != kHandshakeVersion) return Err::kDenied;
    if (c.status == kChallengeBusy) {  // at its connection cap: retry later
        *busy = true;
        return Err::kPeerGone;
    }
    if (c.status != kChallengeOk) return Err::kDenied;
    uint8_t expected[kMac];
    ServerMac(KeyOf(role_), hello, c, expected);
    if (!ConstantTimeEqual(expected, c.mac, kMac)) return Err::kDenied;  // not our deployment
    Proof proof{};
    ClientMac(KeyOf(role_), hello, c, proof.mac);
    Ack ack{};
    if ((e = SendAll(fd, &proof, sizeof proof)) != Err::kOk) return e;
    if ((e = RecvAll(fd, &ack, sizeof ack)) != Err::kOk) return e;
    return ack.magic == kAckMagic && ack.status == DP_OK ? Err::kOk : Err::kDenied;
}

// The server's half: true once the client proved it knows the key of the role it claims. Nothing
// of any segment is read or written before.
bool Engine::ServerHandshake(int fd, uint8_t* role) {
    Hello hello{};
    if (RecvAll(fd, &hello, sizeof hello) != Err::kOk || hello.magic != kHelloMagic) return false;
    Challenge c{kChallengeMagic, kHandshakeVersion, kChallengeOk, 0, {}, {}};
    bool known_role = hello.role == DP_ROLE_PEER || hello.role == DP_ROLE_REMOVER ||
                      hello.role == DP_ROLE_STORER;
    if (!authenticated_ || hello.version != kHandshakeVersion || !known_role ||
        hello.reserved != 0 || !FillRandom(c.nonce, kNonce)) {
        c.status = kChallengeRefused;
        SendAll(fd, &c, sizeof c);
        return false;
    }
    const Key& key = KeyOf(hello.role);
    ServerMac(key, hello, c, c.mac);
    Proof proof{};
    if (SendAll(fd, &c, sizeof c) != Err::kOk || RecvAll(fd, &proof, sizeof proof) != Err::kOk)
        return false;
    uint8_t expected[kMac];
    ClientMac(key, hello, c, expected);
    bool ok = ConstantTimeEqual(expected, proof.mac, kMac);
    Ack ack{kAckMagic, ok ? DP_OK : DP_ERR_DENIED};
    if (SendAll(fd, &ack, sizeof ack) != Err::kOk || !ok) return false;
    *role = hello.role;
    return true;
}

void Engine::ServeConnection(int raw_fd) {
    Fd fd(raw_fd);
    uint8_t role = 0;
    TuneSocket(fd.get(), std::min(server_timeout_ms(), kHandshakeTimeoutMs));
    bool authenticated = ServerHandshake(fd.get(), &role);
    if (authenticated) {
        TuneSocket(fd.get(), server_timeout_ms());  // bounds every request from now on
        ServeRequests(fd.get(), role);
    }
    std::lock_guard<std::mutex> lock(conn_mu_);
    conn_fds_.erase(fd.get());
}

// One request, one response, in order. Between requests a connection may idle as long as the peer
// stays (keepalive notices a vanished host); once a request has begun, every read is bounded by
// the server timeout, so a sender that stops mid-request is closed. Anything malformed closes
// the connection: the stream is never read out of step.
void Engine::ServeRequests(int fd, uint8_t role) {
    char name_buf[kMaxName];
    for (;;) {
        struct pollfd idle = {fd, POLLIN, 0};
        int rc = ::poll(&idle, 1, -1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0 || closing()) return;
        ReqHeader h{};
        if (RecvAll(fd, &h, sizeof h) != Err::kOk) return;
        if (h.magic != kMagic || h.name_len == 0 || h.name_len > kMaxName || h.reserved != 0)
            return;
        Op op = static_cast<Op>(h.op);
        bool data = op == Op::kWrite || op == Op::kRead;
        if (data && (h.length < 0 || h.length > kMaxRequest)) return;
        if (!data && op != Op::kNotify && op != Op::kAlloc && op != Op::kFree) return;
        if (RecvAll(fd, name_buf, h.name_len) != Err::kOk) return;
        std::string name(name_buf, h.name_len);
        RespHeader resp{DP_OK, 0, 0};
        if (op == Op::kNotify) {
            // A name we never registered is dropped: nothing is created, and the writer, which
            // cannot know who listens, is not failed for it (the waiter would time out, naming it).
            BumpNotify(name);
        } else if (data) {
            auto seg = FindOwn(name);
            if (!seg) {
                resp.status = DP_ERR_UNKNOWN_SEGMENT;
            } else if (!InBounds(h.offset, h.length, seg->mapping->size())) {
                resp.status = DP_ERR_OUT_OF_BOUNDS;
            }
            if (op == Op::kWrite) {
                // Bytes go straight from the socket into the segment; a refused write's payload
                // (at most kMaxRequest) is read and dropped so the next header is in step.
                Err e = resp.status == DP_OK
                            ? RecvAll(fd, seg->mapping->base() + h.offset, h.length)
                            : Discard(fd, h.length);
                if (e != Err::kOk) return;
                if (resp.status == DP_OK) Count(DP_COUNTER_TCP_SERVED_WRITTEN, h.length);
            } else {
                if (SendAll(fd, &resp, sizeof resp) != Err::kOk) return;
                if (resp.status == DP_OK) {
                    if (SendAll(fd, seg->mapping->base() + h.offset, h.length) != Err::kOk) return;
                    Count(DP_COUNTER_TCP_SERVED_READ, h.length);
                }
                continue;
            }
        } else if (op == Op::kAlloc) {
            // The owner allocates, for itself or for a storer (a client-only publisher) that
            // asks over this channel; readers and removers never allocate.
            auto seg = FindOwn(name);
            if (role != DP_ROLE_STORER) {
                resp.status = DP_ERR_DENIED;
            } else if (!seg) {
                resp.status = DP_ERR_UNKNOWN_SEGMENT;
            } else if (h.length <= 0) {
                resp.status = DP_ERR_INVALID_ARGUMENT;
            } else {
                auto r = seg->Allocate(h.length);
                if (r.ok()) {
                    resp.value = r.value();
                } else {
                    resp.status = Code(r.error());
                }
            }
        } else {
            auto seg = FindOwn(name);
            if (role != DP_ROLE_REMOVER && role != DP_ROLE_STORER) {
                resp.status = DP_ERR_DENIED;
            } else if (!seg) {
                resp.status = DP_ERR_UNKNOWN_SEGMENT;
            } else {
                resp.status = Code(seg->allocator->Free(h.offset));
            }
        }
        if (SendAll(fd, &resp, sizeof resp) != Err::kOk) return;
    }
}

Err Engine::WaitNotify(const std::string& name, int64_t at_least, int64_t timeout_ms,
                       int64_t* value) {
    std::unique_lock<std::mutex> lock(notify_mu_);
    auto it = notify_.find(name);
    if (it == notify_.end()) return Err::kNotFound;
    auto ready = [&] {
        auto now = notify_.find(name);
        return closing() || now == notify_.end() || now->second >= at_least;
    };
    bool ok = true;
    if (timeout_ms < 0) {
        notify_cv_.wait(lock, ready);
    } else {
        ok = notify_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
    }
    it = notify_.find(name);
    if (it == notify_.end()) return Err::kNotFound;  // unregistered while waiting
    *value = it->second;
    if (*value >= at_least) return Err::kOk;
    if (closing()) return Err::kClosed;
    return ok ? Err::kOk : Err::kTimeout;
}

}  // namespace dp

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

// The one table of status codes: dp_error_codes, dp_error_name and every message read it.
constexpr ErrorInfo kErrors[] = {
    {DP_OK, "OK", "ok"},
    {DP_PENDING, "PENDING", "not finished yet"},
    {DP_ERR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "invalid argument"},
    {DP_ERR_UNKNOWN_SEGMENT, "UNKNOWN_SEGMENT", "unknown segment"},
    {DP_ERR_OUT_OF_BOUNDS, "OUT_OF_BOUNDS", "range outside the segment or registered memory"},
    {DP_ERR_UNREGISTERED_BUFFER, "UNREGISTERED_BUFFER",
     "local memory is not inside a registered buffer"},
    {DP_ERR_PEER_GONE, "PEER_GONE", "the owner is gone (connection refused, reset or timed out)"},
    {DP_ERR_SHORT_TRANSFER, "SHORT_TRANSFER", "fewer bytes moved than asked"},
    {DP_ERR_SEGMENT_FULL, "SEGMENT_FULL", "no room in the segment"},
    {DP_ERR_TIMEOUT, "TIMEOUT", "timed out"},
    {DP_ERR_IO, "IO", "i/o error"},
    {DP_ERR_EXISTS, "EXISTS", "already exists"},
    {DP_ERR_NOT_FOUND, "NOT_FOUND", "not found"},
    {DP_ERR_CLOSED, "CLOSED", "the engine is shut down"},
    {DP_ERR_INTERNAL, "INTERNAL", "internal error (out of memory or threads)"},
    {DP_ERR_DENIED, "DENIED",
     "refused: the tcp handshake failed or this engine's role may not do this"},
    {DP_ERR_FOREIGN_HOST, "FOREIGN_HOST",
     "its node label is this engine's but its host identity is another's"},
};

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

double Seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

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
                     const char* shm_dir, const uint8_t* secret, int32_t secret_len, int32_t role,
                     dp_engine** out, dp_status* status) {
    return Guard(status, [&] {
        if (!node_label || !*node_label || !host_id || !*host_id || !bind_host || !shm_dir ||
            !out || port < 0 || port > 65535 || tcp_streams < 1 || tcp_streams > 64 ||
            local_threads < 1 || local_threads > 64 || io_timeout_ms < 0 ||
            connect_timeout_ms < 0 || max_connections < 1 || secret_len < 0 ||
            (secret_len > 0 && !secret) ||
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
        o.secret.assign(secret, secret + secret_len);
        o.role = static_cast<uint8_t>(role);
        auto e = std::make_unique<dp_engine>();
        e->impl = std::make_unique<dp::Engine>(std::move(o));
        dp::Err err = e->impl->Start(bind_host, port);
        if (err != dp::Err::kOk)
            return Report(status, err, [&] {
                return "tcp server on " + Quoted(bind_host) + " port " + std::to_string(port) +
                       (err == dp::Err::kInvalidArgument
                            ? " (no address or resolvable name)"
                            : " (cannot bind or listen)");
            });
        *out = e.release();
        return Report(status, DP_OK, [] { return std::string(); });
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
        return Report(status, DP_OK, [] { return std::string(); });
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
        auto r = engine->impl->CreateSegment(name, shm_path, size,
                                             (flags & DP_SEGMENT_RECEIVE) == 0,
                                             (flags & DP_SEGMENT_REPLACE) != 0);
        if (!r.ok()) return Report(status, r.error(), what);
        *base_out = reinterpret_cast<int64_t>(r.value());
        return Report(status, DP_OK, what);
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

int dp_memory_register(dp_engine* engine, int64_t addr, int64_t length, dp_status* status) {
    return Guard(status, [&] {
        if (!engine) return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_memory_register"));
        return Report(status, engine->impl->Register(addr, length), [&] {
            return "registering " + std::to_string(length) + " bytes of local memory (it overlaps"
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
                    int64_t size, int64_t* segment_id_out, dp_status* status) {
    return Guard(status, [&] {
        if (!engine || !name || !node_label || !host_id || !host || !shm_path || !segment_id_out)
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_segment_open"));
        dp::PeerSegment desc;
        desc.name = name;
        desc.label = node_label;
        desc.host_id = host_id;
        desc.host = host;
        desc.port = port;
        desc.shm_path = shm_path;
        desc.size = size;
        auto r = engine->impl->OpenSegment(desc);
        if (!r.ok())
            return Report(status, r.error(), [&] {
                return "opening segment " + Quoted(name) + " of node label " +
                       Quoted(node_label) + " on host " + Quoted(host_id) + " at " +
                       std::string(host) + ":" + std::to_string(port) + " (file " +
                       Quoted(shm_path) + ")";
            });
        *segment_id_out = r.value();
        return Report(status, DP_OK, [] { return std::string(); });
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
        return Report(status, engine->impl->CloseSegment(segment_id), [&] {
            return "closing " + engine->impl->DescribeSegment(segment_id);
        });
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
        return Report(status, DP_OK, [] { return std::string(); });
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
        return Report(status,
                      engine->impl->Carve(segment_id, block_offset, count, starts, lengths), [&] {
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
        return Report(status, DP_OK, [] { return std::string(); });
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
        return Report(status, DP_OK, [] { return std::string(); });
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
            done = s.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                 [&] { return s.done; });
        }
        return Report(status, done ? DP_OK : DP_ERR_TIMEOUT, [&] {
            return "a batch of " + std::to_string(s.count) + " tasks, " +
                   std::to_string(s.remaining) + " unfinished after " +
                   std::to_string(timeout_ms) + " ms";
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
        return Report(status, DP_OK, [] { return std::string(); });
    });
}

int dp_crc32c(int64_t addr, int64_t length, int32_t* crc_out, dp_status* status) {
    return Guard(status, [&] {
        if (!crc_out || length < 0 || (length > 0 && addr == 0))
            return Report(status, DP_ERR_INVALID_ARGUMENT, Invalid("dp_crc32c"));
        *crc_out = static_cast<int32_t>(
            dp::Crc32cUpdate(0, reinterpret_cast<const void*>(addr), length));
        return Report(status, DP_OK, [] { return std::string(); });
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
        return Report(status, DP_OK, [] { return std::string(); });
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
        return Report(status, DP_OK, [] { return std::string(); });
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

int dp_bench_memcpy(int64_t dst, int64_t src, int64_t length, int32_t repeats, double* gbps_out) {
    return Guard(nullptr, [&] {
        if (dst <= 0 || src <= 0 || length <= 0 || repeats < 1 || !gbps_out)
            return DP_ERR_INVALID_ARGUMENT;
        auto* d = reinterpret_cast<char*>(dst);
        auto* s = reinterpret_cast<const char*>(src);
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < repeats; ++i) std::memcpy(d, s, static_cast<size_t>(length));
        *gbps_out = static_cast<double>(length) * repeats / Seconds(start) / 1e9;
        return DP_OK;
    });
}

int dp_bench_socket(int64_t dst, int64_t src, int64_t length, int32_t streams, int32_t repeats,
                    double* gbps_out) {
    return Guard(nullptr, [&] {
        if (dst <= 0 || src <= 0 || length <= 0 || streams < 1 || streams > 64 || repeats < 1 ||
            !gbps_out)
            return DP_ERR_INVALID_ARGUMENT;
        dp::Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        struct sockaddr_in addr {};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (!listener.valid() ||
            ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listener.get(), streams) != 0 ||
            ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
            return DP_ERR_IO;
        std::vector<dp::Fd> senders, receivers;
        for (int i = 0; i < streams; ++i) {
            dp::Fd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
            if (!c.valid() ||
                ::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
                return DP_ERR_IO;
            dp::Fd a(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (!a.valid()) return DP_ERR_IO;
            dp::TuneSocket(c.get(), 30000);
            dp::TuneSocket(a.get(), 30000);
            senders.push_back(std::move(c));
            receivers.push_back(std::move(a));
        }
        const int64_t kWrite = 4 << 20;
        int64_t share = (length + streams - 1) / streams;
        std::atomic<int> failures{0};
        auto round = [&] {
            std::vector<std::thread> threads;
            for (int i = 0; i < streams; ++i) {
                int64_t begin = std::min(length, share * i);
                int64_t end = std::min(length, begin + share);
                threads.emplace_back([&, i, begin, end] {
                    for (int64_t o = begin; o < end; o += kWrite)
                        if (dp::SendAll(senders[i].get(), reinterpret_cast<char*>(src) + o,
                                        std::min(kWrite, end - o)) != dp::Err::kOk)
                            failures++;
                });
                threads.emplace_back([&, i, begin, end] {
                    for (int64_t o = begin; o < end; o += kWrite)
                        if (dp::RecvAll(receivers[i].get(), reinterpret_cast<char*>(dst) + o,
                                        std::min(kWrite, end - o)) != dp::Err::kOk)
                            failures++;
                });
            }
            for (auto& t : threads) t.join();
        };
        round();  // warm-up
        auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < repeats; ++r) round();
        double secs = Seconds(start);
        if (failures.load() != 0) return DP_ERR_IO;
        *gbps_out = static_cast<double>(length) * repeats / secs / 1e9;
        return DP_OK;
    });
}

}  // extern "C"
