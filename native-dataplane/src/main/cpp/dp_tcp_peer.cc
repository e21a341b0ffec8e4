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

// Whether a pooled connection with nothing in flight can no longer carry a request: its server
// closed it (idle, restarted), it errored, or it sent bytes nobody asked for. Never waits.
bool HungUp(int fd) {
    struct pollfd p {};
    p.fd = fd;
    p.events = POLLIN | POLLRDHUP;
    return ::poll(&p, 1, 0) != 0;
}

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
        } else if (!StartStreams()) {
            for (auto& j : jobs) unstarted.push_back(std::move(j));
        } else {
            for (auto& j : jobs) jobs_.push_back(std::move(j));
        }
    }
    cv_.notify_all();
    for (auto& j : unstarted) engine_->CompleteChunk(j.batch, j.task, Err::kInternal, 0);
    FailPending();
}

// With mu_ held: (re)starts the stream threads that left; true when at least one runs.
bool TcpPeer::StartStreams() {
    int streams = engine_->streams();
    if (threads_.empty()) {
        threads_.resize(streams);
        fds_.assign(streams, -1);
        left_.assign(streams, true);
    }
    for (int i = 0; i < streams && live_ < streams; ++i) {
        if (!left_[i]) continue;
        // It marked itself as left under mu_ as its last use of this peer's state, so joining
        // here (mu_ held) waits only for it to return.
        if (threads_[i].joinable()) threads_[i].join();
        try {
            threads_[i] = std::thread([this, i] {
                NameThread("dp-stream");
                try {
                    StreamLoop(i);
                } catch (...) {  // never std::terminate the JVM
                    std::lock_guard<std::mutex> lock(mu_);
                    if (!left_[i]) {  // it left without marking it
                        left_[i] = true;
                        --live_;
                        fds_[i] = -1;
                    }
                }
            });
        } catch (const std::system_error&) {
            break;  // no more threads now: run with the streams that started
        }
        left_[i] = false;
        ++live_;
    }
    return live_ > 0;
}

bool TcpPeer::Idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return jobs_.empty() && pending_fail_.empty() && waiting_ == live_;
}

// One request/response on the control connection (alloc, free, notify).
Result<int64_t> TcpPeer::Control(Op op, const std::string& name, int64_t offset, int64_t length,
                                 uint64_t incarnation) {
    std::lock_guard<std::mutex> lock(control_mu_);
    if (engine_->closing()) return Err::kClosed;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (control_.valid() && HungUp(control_.get())) control_.Reset();  // closed as idle
        if (!control_.valid()) {
            auto fd = Connect(&control_mac_);
            if (!fd.ok()) return fd.error();
            control_ = std::move(fd.value());
        }
        RespHeader resp{};
        Err e = SendRequest(control_.get(), &control_mac_, op, name, offset, length, incarnation);
        if (e == Err::kOk) e = RecvAll(control_.get(), &resp, sizeof resp);
        if (e == Err::kOk) {
            Err answer = FromReply(resp.status);
            if (answer == Err::kProtocol) control_.Reset();  // out of step from here on
            if (answer != Err::kOk) return answer;
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
        if (!HungUp(control_.get())) return Err::kOk;  // open and quiet: a live peer
        control_.Reset();  // hung up, errored or sent unasked bytes: start afresh
    }
    auto fd = Connect(&control_mac_);
    if (!fd.ok()) return fd.error();
    control_ = std::move(fd.value());
    return Err::kOk;
}

void TcpPeer::Cancel(const std::shared_ptr<BatchState>& batch) {
    std::vector<TcpJob> dropped;
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = jobs_.begin(); it != jobs_.end();) {
            if (it->batch == batch) {
                dropped.push_back(std::move(*it));
                it = jobs_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& j : dropped) engine_->CompleteChunk(j.batch, j.task, Err::kCancelled, 0);
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
    for (auto& t : threads)
        if (t.joinable()) t.join();  // a slot whose thread never started is not
    FailPending();
}

// Resolves the peer (host name, IPv4 or IPv6), connects to the first address that answers
// within the connect timeout and passes the handshake. kDenied when the peer refuses our
// proof or fails its own: no other address of it is tried then.
Result<Fd> TcpPeer::Connect(RequestMac* mac) {
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
            result = engine_->ClientHandshake(fd.get(), &busy, mac);
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

// Keeps up to kPipelineDepth requests (kPipelineBytes of payload) in flight on this stream's
// connection: before it waits for the oldest response it sends the requests of the chunks it can
// take, so the server finds the next request already there. Responses come in request order. A
// connection that fails fails every chunk in flight on it (kPeerGone); the next chunk reconnects.
// A pooled connection that had answered before and breaks is most likely one its server closed as
// idle (or a restarted server): its chunks go back to the queue once, for a fresh connection, so a
// client never sees the server's idle timeout. A stream idle for the client idle time closes its
// connection and its thread leaves; the next chunk starts it again.
void TcpPeer::StreamLoop(int index) {
    Fd fd;
    RequestMac mac;        // fd's requests
    int64_t answered = 0;  // responses received on fd: a connection that worked before
    // In flight, oldest first: a ring of kPipelineDepth slots (no allocation per chunk).
    std::vector<TcpJob> window(kPipelineDepth);
    int head = 0, count = 0;
    int64_t window_bytes = 0, window_requests = 0;  // payload and request bytes in flight
    auto request_size = [](const TcpJob& j) {
        return static_cast<int64_t>(sizeof(ReqHeader) + j.segment->size() + kRequestMac);
    };
    std::vector<TcpJob> fresh;  // taken from the queue, requests not sent yet
    fresh.reserve(kPipelineDepth);
    std::vector<char> request_buf;
    std::vector<TcpJob> failed;
    auto fail_window = [&](Err e) {
        bool retry = e == Err::kPeerGone && answered > 0;
        failed.clear();
        {
            std::lock_guard<std::mutex> lock(mu_);
            // Back to the front of the queue, oldest first, those not retried yet.
            for (int k = count - 1; k >= 0; --k) {
                TcpJob& j = window[(head + k) % kPipelineDepth];
                if (retry && !j.retried && !stopping_) {
                    j.retried = true;
                    jobs_.push_front(std::move(j));
                } else {
                    failed.push_back(std::move(j));
                }
            }
            fds_[index] = -1;
        }
        head = count = 0;
        window_bytes = window_requests = 0;
        answered = 0;
        fd.Reset();
        for (auto& j : failed) engine_->CompleteChunk(j.batch, j.task, e, 0);
        failed.clear();
    };
    const auto idle = std::chrono::milliseconds(engine_->client_idle_ms());
    for (;;) {
        fresh.clear();
        bool stopping;
        {
            std::unique_lock<std::mutex> lock(mu_);
            if (count == 0) {
                ++waiting_;
                bool woken = cv_.wait_for(lock, idle, [&] { return stopping_ || !jobs_.empty(); });
                --waiting_;
                if (!woken) {
                    // Idle: close the connection before its server does, and leave (decided and
                    // marked in one step under mu_, so Enqueue restarts this stream when needed).
                    left_[index] = true;
                    --live_;
                    fds_[index] = -1;
                    lock.unlock();
                    fd.Reset();
                    return;
                }
                if (jobs_.empty()) break;
            }
            stopping = stopping_;
            int64_t bytes = window_bytes, requests = window_requests;
            while (!jobs_.empty() && count + static_cast<int>(fresh.size()) < kPipelineDepth) {
                const TcpJob& next = jobs_.front();
                if (count > 0 || !fresh.empty()) {
                    Op op = count > 0 ? window[head].op : fresh.front().op;
                    // One direction per window, within its bytes, and leave a chunk to a stream
                    // that waits for one rather than queue it behind our own.
                    if (next.op != op || bytes + next.length > kPipelineBytes ||
                        requests + request_size(next) > kPipelineRequestBytes ||
                        static_cast<int>(jobs_.size()) <= waiting_ || stopping)
                        break;
                }
                bytes += next.length;
                requests += request_size(next);
                fresh.push_back(std::move(jobs_.front()));
                jobs_.pop_front();
            }
        }
        if (stopping) {
            for (auto& j : fresh) engine_->CompleteChunk(j.batch, j.task, Err::kClosed, 0);
            fresh.clear();
            if (count == 0) continue;
        }
        // A chunk of a cancelled batch is never sent (nor sent again after a broken connection):
        // its batch's memory and its target may be reused as soon as the cancel returned.
        if (!fresh.empty()) {
            size_t kept = 0;
            for (auto& j : fresh) {
                if (j.batch->cancelled.load()) {
                    engine_->CompleteChunk(j.batch, j.task, Err::kCancelled, 0);
                } else {
                    if (&fresh[kept] != &j) fresh[kept] = std::move(j);
                    ++kept;
                }
            }
            fresh.resize(kept);
            if (fresh.empty() && count == 0) continue;
        }
        if (!fresh.empty()) {
            if (fd.valid() && count == 0 && HungUp(fd.get())) {
                // Closed by its server while pooled (idle timeout, restart): not worth a request.
                std::lock_guard<std::mutex> lock(mu_);
                fds_[index] = -1;
                fd.Reset();
            }
            if (!fd.valid()) {  // nothing is in flight without a connection
                auto c = Connect(&mac);
                if (!c.ok()) {
                    for (auto& j : fresh) engine_->CompleteChunk(j.batch, j.task, c.error(), 0);
                    continue;
                }
                fd = std::move(c.value());
                answered = 0;
                std::lock_guard<std::mutex> lock(mu_);
                fds_[index] = fd.get();
                if (stopping_) ::shutdown(fd.get(), SHUT_RDWR);
            }
            Err e = SendRequests(fd.get(), &mac, fresh, &request_buf);
            for (auto& j : fresh) {
                window_bytes += j.length;
                window_requests += request_size(j);
                window[(head + count++) % kPipelineDepth] = std::move(j);
            }
            if (e != Err::kOk) {
                fail_window(e);
                continue;
            }
        }
        TcpJob& oldest = window[head];
        int64_t bytes = 0;
        Err e = ReceiveResponse(fd.get(), oldest, &bytes);
        if (e == Err::kPeerGone || e == Err::kProtocol) {
            // The stream is out of step: this chunk and every one behind it (retried once when
            // the connection had worked before; a peer out of protocol is never retried).
            fail_window(e);
            continue;
        }
        ++answered;
        TcpJob done = std::move(oldest);
        head = (head + 1) % kPipelineDepth;
        --count;
        window_bytes -= done.length;
        window_requests -= request_size(done);
        if (bytes > 0)
            engine_->Count(done.op == Op::kRead ? DP_COUNTER_TCP_READ : DP_COUNTER_TCP_WRITTEN,
                           bytes);
        engine_->CompleteChunk(done.batch, done.task, e, bytes);
    }
    std::lock_guard<std::mutex> lock(mu_);  // stopping
    fds_[index] = -1;
    left_[index] = true;
    --live_;
}

// Sends the requests of jobs (all of one direction): reads as one send of all their headers,
// writes each as header and payload in one sendmsg.
Err TcpPeer::SendRequests(int fd, RequestMac* mac, const std::vector<TcpJob>& jobs,
                          std::vector<char>* buf) {
    if (jobs.front().op == Op::kRead) {
        buf->clear();
        for (const auto& j : jobs)
            AppendRequest(buf, mac, j.op, *j.segment, j.remote_offset, j.length, j.incarnation);
        return SendAll(fd, buf->data(), static_cast<int64_t>(buf->size()));
    }
    for (const auto& j : jobs) {
        TaskState& w = j.batch->tasks[j.task];
        if (w.chunk_crc) {
            int64_t t0 = Crc32cNow();
            w.chunk_crc[j.chunk] = Crc32cUpdate(0, j.local, j.length);
            j.batch->crc_nanos.fetch_add(Crc32cNow() - t0);
        }
        Err e = SendRequest(fd, mac, j.op, *j.segment, j.remote_offset, j.length, j.incarnation,
                            j.local);
        if (e != Err::kOk) return e;
    }
    return Err::kOk;
}

// Receives the response to job's request: a WRITE's status, or a READ's status and its bytes
// (straight into the destination, summed as they land when the batch takes CRC32C).
Err TcpPeer::ReceiveResponse(int fd, const TcpJob& job, int64_t* bytes) {
    RespHeader resp{};
    Err e = RecvAll(fd, &resp, sizeof resp);
    if (e != Err::kOk) return e;
    Err answer = FromReply(resp.status);
    if (answer != Err::kOk) return answer;  // a refusal carries no payload
    if (job.op == Op::kRead) {
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
    }
    *bytes = job.length;
    return Err::kOk;
}

}  // namespace dp
