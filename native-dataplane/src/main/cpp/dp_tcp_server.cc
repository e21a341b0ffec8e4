// The server half of the tcp transport: accepts connections, runs the handshake and serves
// requests straight between sockets and this engine's segments (the target stays passive).
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "dp_engine.h"

namespace dp {

namespace {

const char* RoleName(uint8_t role) {
    switch (role) {
        case DP_ROLE_PEER:
            return "peer";
        case DP_ROLE_REMOVER:
            return "remover";
        case DP_ROLE_STORER:
            return "storer";
        default:
            return "unknown";
    }
}

}  // namespace

// One line on stderr (the service's log) for a connection the server closes on evidence of
// tampering: who, which role, which request, why. Never a key or a byte of payload.
void Engine::LogClosed(int fd, uint8_t role, uint64_t request, const char* why) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    struct sockaddr_storage addr {};
    socklen_t len = sizeof addr;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        if (addr.ss_family == AF_INET) {
            auto* a = reinterpret_cast<sockaddr_in*>(&addr);
            ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            port = ntohs(a->sin_port);
        } else if (addr.ss_family == AF_INET6) {
            auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
            ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            port = ntohs(a->sin6_port);
        }
    }
    std::fprintf(stderr,
                 "weight-relay dataplane: closed the connection of %s port %d (role %s) at its"
                 " request #%llu: %s\n",
                 host, port, RoleName(role), static_cast<unsigned long long>(request), why);
    std::fflush(stderr);
}

void Engine::AcceptLoop() {
    NameThread("dp-accept");
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

// Hands an accepted connection to a thread of its own, or refuses it at once (authenticated
// connections at their cap, no thread to be had): the client reads a "busy" challenge or EOF,
// never a hang. Connections in their handshake have a cap of their own; when it is full the oldest
// of them is closed to make room, so clients that never finish (or dribble) their handshake
// cannot keep an honest peer out, and never hold an authenticated slot.
void Engine::Accept(int fd) {
    std::lock_guard<std::mutex> lock(conn_mu_);
    if (closing()) {
        ::close(fd);
        return;
    }
    int authenticated = 0, handshaking = 0;
    std::shared_ptr<Connection> oldest;
    for (auto it = conns_.begin(); it != conns_.end();) {
        Connection& c = **it;
        if (c.done.load()) {
            c.thread.join();
            it = conns_.erase(it);
            continue;
        }
        if (c.fd < 0) {  // closing: its thread is about to leave
        } else if (c.authenticated) {
            ++authenticated;
        } else if (!c.evicted) {
            ++handshaking;
            if (!oldest || c.seq < oldest->seq) oldest = *it;
        }
        ++it;
    }
    if (authenticated >= max_connections_) {
        Challenge busy{kChallengeMagic, kHandshakeVersion, kChallengeBusy, 0, {}, {}};
        ssize_t ignored = ::send(fd, &busy, sizeof busy, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)ignored;
        ::close(fd);
        return;
    }
    if (handshaking >= max_handshakes_ && oldest) {
        // Its thread sees EOF at once, closes the socket and leaves.
        oldest->evicted = true;
        ::shutdown(oldest->fd, SHUT_RDWR);
    }
    auto conn = std::make_shared<Connection>();
    conn->fd = fd;
    conn->seq = next_conn_seq_++;
    conns_.push_back(conn);
    try {
        conn->thread = std::thread([this, conn] {
            NameThread("dp-conn");
            try {
                ServeConnection(conn);
            } catch (...) {  // never std::terminate the JVM; the fd is closed by then
            }
            conn->done.store(true);
        });
    } catch (...) {  // no thread (or no memory) to be had: refuse this one
        conns_.pop_back();
        ::close(fd);
    }
}

Err Engine::ClientHandshake(int fd, bool* busy, RequestMac* mac) {
    if (!HasKey(role_)) return Err::kDenied;  // no key of our role: we talk to nobody over tcp
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
    const Key& key = keys_[role_];
    ServerMac(key, hello, c, expected);
    if (!ConstantTimeEqual(expected, c.mac, kMac)) return Err::kDenied;  // not our deployment
    Proof proof{};
    ClientMac(key, hello, c, proof.mac);
    Ack ack{};
    if ((e = SendAll(fd, &proof, sizeof proof)) != Err::kOk) return e;
    if ((e = RecvAll(fd, &ack, sizeof ack)) != Err::kOk) return e;
    if (ack.magic == kAckMagic && ack.status == kAckBusy) {  // filled up while we proved our key
        *busy = true;
        return Err::kPeerGone;
    }
    if (ack.magic != kAckMagic || ack.status != DP_OK) return Err::kDenied;
    *mac = RequestMac(key, hello, c);
    return Err::kOk;
}

// The server's half up to the client's proof: true once the client proved it knows the key of the
// role it claims, all within deadline, with *mac ready to check its requests. A role whose key
// this engine was not given is refused like an unknown one. Nothing of any segment is read or
// written before; the caller answers the proof (ok or busy) once it has an authenticated slot.
bool Engine::ServerHandshake(int fd, std::chrono::steady_clock::time_point deadline, uint8_t* role,
                             RequestMac* mac) {
    Hello hello{};
    if (RecvAllBy(fd, &hello, sizeof hello, deadline) != Err::kOk || hello.magic != kHelloMagic)
        return false;
    Challenge c{kChallengeMagic, kHandshakeVersion, kChallengeOk, 0, {}, {}};
    bool known_role =
        hello.role == DP_ROLE_PEER || hello.role == DP_ROLE_REMOVER || hello.role == DP_ROLE_STORER;
    if (hello.version != kHandshakeVersion || !known_role || !HasKey(hello.role) ||
        hello.reserved != 0 || !FillRandom(c.nonce, kNonce)) {
        c.status = kChallengeRefused;
        SendAll(fd, &c, sizeof c);
        return false;
    }
    const Key& key = keys_[hello.role];
    ServerMac(key, hello, c, c.mac);
    Proof proof{};
    if (SendAll(fd, &c, sizeof c) != Err::kOk ||
        RecvAllBy(fd, &proof, sizeof proof, deadline) != Err::kOk)
        return false;
    uint8_t expected[kMac];
    ClientMac(key, hello, c, expected);
    if (!ConstantTimeEqual(expected, proof.mac, kMac)) {
        Ack denied{kAckMagic, DP_ERR_DENIED};
        SendAll(fd, &denied, sizeof denied);
        return false;
    }
    *role = hello.role;
    *mac = RequestMac(key, hello, c);
    return true;
}

// Moves an authenticated connection from the handshake cap to max_connections; false when those
// are all taken (or it was evicted meanwhile).
bool Engine::TakeAuthenticatedSlot(const std::shared_ptr<Connection>& conn) {
    std::lock_guard<std::mutex> lock(conn_mu_);
    if (conn->evicted || closing()) return false;
    int authenticated = 0;
    for (const auto& c : conns_) authenticated += c->authenticated && c->fd >= 0;
    if (authenticated >= max_connections_) return false;
    conn->authenticated = true;
    return true;
}

void Engine::ServeConnection(const std::shared_ptr<Connection>& conn) {
    Fd fd(conn->fd);
    uint8_t role = 0;
    RequestMac mac;
    int handshake_ms = std::min(server_timeout_ms(), kHandshakeTimeoutMs);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(handshake_ms);
    TuneSocket(fd.get(), handshake_ms);
    if (ServerHandshake(fd.get(), deadline, &role, &mac)) {
        bool slot = TakeAuthenticatedSlot(conn);
        Ack ack{kAckMagic, slot ? DP_OK : kAckBusy};
        if (SendAll(fd.get(), &ack, sizeof ack) == Err::kOk && slot) {
            TuneSocket(fd.get(), server_timeout_ms());  // bounds every request from now on
            ServeRequests(fd.get(), role, &mac);
        }
    }
    std::lock_guard<std::mutex> lock(conn_mu_);
    conn->fd = -1;  // closed right after, when fd leaves scope: nobody shuts it down any more
}

// One request, one response, in order (a client may have sent the next requests already: they
// wait in the socket until their turn). Between requests a connection may idle for the idle
// timeout, then the server closes it (its peer reconnects when it has work again), so a peer that
// restarted or vanished holds no slot and no thread for long; once a request has begun, every read
// is bounded by the server timeout, so a sender that stops mid-request is closed. Anything
// malformed closes the connection: the stream is never read out of step. Every request carries the
// MAC of its header and name under the connection's key and sequence number (RequestMac), checked
// before the request is acted on: one altered, injected, replayed or reordered on the path closes
// the connection, and says so on stderr (the service's log).
void Engine::ServeRequests(int fd, uint8_t role, RequestMac* mac) {
    char name_buf[kMaxName];
    uint8_t tag[kRequestMac];
    for (;;) {
        struct pollfd idle = {fd, POLLIN, 0};
        int rc = ::poll(&idle, 1, idle_timeout_ms_);
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
        if (RecvAll(fd, tag, sizeof tag) != Err::kOk) return;
        if (!mac->Verify(h, name_buf, h.name_len, tag)) {
            LogClosed(fd, role, mac->sequence() - 1, "its MAC does not match its header");
            return;
        }
        std::string name(name_buf, h.name_len);
        RespHeader resp{DP_OK, 0, 0};
        if (op == Op::kNotify) {
            // A name we never registered is dropped: nothing is created, and the writer, which
            // cannot know who listens, is not failed for it (the waiter would time out, naming it).
            BumpNotify(name);
        } else if (data) {
            auto seg = FindOwn(name);
            // A WRITE holds the fence until its payload landed: a renewal (RenewSegment) waits for
            // it, so no byte checked against the earlier incarnation lands after the new one is.
            std::shared_lock<std::shared_mutex> fenced;
            if (seg && op == Op::kWrite) fenced = std::shared_lock<std::shared_mutex>(seg->fence);
            if (!seg) {
                resp.status = DP_ERR_UNKNOWN_SEGMENT;
            } else if (h.incarnation != seg->incarnation) {
                // Meant for an earlier segment of this name (a re-registered receive buffer): a
                // late write of an abandoned update must not land in the new bytes.
                resp.status = DP_ERR_STALE_SEGMENT;
            } else if (op == Op::kWrite && seg->store && role == DP_ROLE_PEER) {
                // Store capacity holds published objects: only its owner (locally), a storer it
                // allocated for, or a remover writes there. Peers (loaders) write only into
                // receive segments.
                resp.status = DP_ERR_READ_ONLY;
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
                // The header and the bytes leave in one sendmsg (no lone 16-byte segment).
                struct iovec iov[2] = {
                    {&resp, sizeof resp},
                    {resp.status == DP_OK ? seg->mapping->base() + h.offset : nullptr,
                     resp.status == DP_OK ? static_cast<size_t>(h.length) : 0}};
                if (SendAllV(fd, iov, resp.status == DP_OK ? 2 : 1) != Err::kOk) return;
                if (resp.status == DP_OK) Count(DP_COUNTER_TCP_SERVED_READ, h.length);
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
            } else if (h.incarnation != seg->incarnation) {
                resp.status = DP_ERR_STALE_SEGMENT;
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
            } else if (h.incarnation != seg->incarnation) {
                resp.status = DP_ERR_STALE_SEGMENT;  // the allocation went with that segment
            } else {
                resp.status = Code(seg->allocator->Free(h.offset));
            }
        }
        if (SendAll(fd, &resp, sizeof resp) != Err::kOk) return;
    }
}

}  // namespace dp
