// The client half of the tcp transport (see dp_tcp_peer.h).
#include "dp_tcp_peer.h"

#include <netdb.h>
#include <poll.h>

#include <chrono>
#include <system_error>

#include "dp_crc32c.h"
#include "dp_engine.h"

namespace dp {

namespace {

// Connects within timeout_ms (0: the system's own limit); the socket is blocking again after.
bool ConnectWithin(int fd, const sockaddr* addr, socklen_t len, int timeout_ms) {
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

}  // namespace

void TcpPeer::Enqueue(std::vector<TcpJob>&& jobs) {
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
Result<int64_t> TcpPeer::Control(Op op, const std::string& name, int64_t offset, int64_t length) {
    std::lock_guard<std::mutex> lock(control_mu_);
    if (engine_->closing()) return Err::kClosed;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!control_.valid()) {
            auto fd = Connect();
            if (!fd.ok()) return fd.error();
            control_ = std::move(fd.value());
        }
        RespHeader resp{};
        Err e = SendRequest(control_.get(), op, name, offset, length);
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
Err TcpPeer::Probe() {
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
    control_ = std::move(fd.value());
    return Err::kOk;
}

void TcpPeer::Stop() {
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

// Resolves the peer (host name, IPv4 or IPv6), connects to the first address that answers
// within the connect timeout and passes the handshake. kDenied when the peer refuses our
// proof or fails its own: no other address of it is tried then.
Result<Fd> TcpPeer::Connect() {
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
                return std::move(fd);
            }
            if (!busy) break;  // a cap is worth a short wait; anything else is not
        }
        if (result == Err::kDenied || result == Err::kInternal) break;
    }
    ::freeaddrinfo(res);
    return result;
}

void TcpPeer::FailPending() {
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

void TcpPeer::StreamLoop(int index) {
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
            fd = std::move(c.value());
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

Err TcpPeer::Run(int fd, const TcpJob& job, int64_t* bytes) {
    Err e = SendRequest(fd, job.op, job.segment, job.remote_offset, job.length);
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

}  // namespace dp
