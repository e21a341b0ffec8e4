// The engine: own and opened segments, registered memory, batches and notify counters. It hands
// chunks to the local copy pool (dp_local_copy.cc) or to tcp peers (dp_tcp_peer.cc); its tcp
// server is in dp_tcp_server.cc.
#include "dp_engine.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "dp_crc32c.h"

namespace dp {

namespace {

// A random non-zero incarnation other than previous.
Result<uint64_t> DrawIncarnation(uint64_t previous) {
    uint64_t drawn = 0;
    while (drawn == 0 || drawn == previous) {
        if (!FillRandom(reinterpret_cast<uint8_t*>(&drawn), sizeof drawn)) return Err::kInternal;
    }
    return drawn;
}

}  // namespace

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
    port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
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
        std::list<std::shared_ptr<Connection>> conns;
        {
            std::lock_guard<std::mutex> lock(conn_mu_);
            for (auto& c : conns_)
                if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
            conns.swap(conns_);
        }
        for (auto& c : conns) c->thread.join();
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
    auto mapping = ShmMapping::Create(shm_dir_, path, size, replace);
    if (!mapping.ok()) return mapping.error();
    auto seg = std::make_shared<OwnSegment>();
    seg->name = name;
    seg->path = path;
    seg->mapping = std::move(mapping.value());
    seg->mapping->DetachOnRelease();
    seg->store = store;
    auto incarnation = DrawIncarnation(0);
    if (!incarnation.ok()) return incarnation.error();
    seg->incarnation.store(incarnation.value());
    if (!seg->mapping->PublishIncarnation(incarnation.value())) return Err::kIo;
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

Result<uint64_t> Engine::RenewSegment(const std::string& name) {
    std::shared_ptr<OwnSegment> seg = FindOwn(name);
    if (!seg) return Err::kUnknownSegment;
    // A store segment's allocations are objects of its incarnation; only a transfer target renews.
    if (seg->store) return Err::kInvalidArgument;
    std::unique_lock<std::shared_mutex> fenced(seg->fence);
    auto next = DrawIncarnation(seg->incarnation.load());
    if (!next.ok()) return next.error();
    seg->incarnation.store(next.value());
    // Without it a peer mapping the file would still take the earlier incarnation: fail, so the
    // caller makes the segment anew instead (its incarnation is a new one already).
    if (!seg->mapping->PublishIncarnation(next.value())) return Err::kIo;
    return next.value();
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
    if (unlink_file) seg->mapping->UnlinkOwnFile(shm_dir_, seg->path);
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

namespace {

bool SameDescriptor(const PeerSegment& a, const PeerSegment& b) {
    return a.host == b.host && a.port == b.port && a.size == b.size && a.label == b.label &&
           a.host_id == b.host_id && a.shm_path == b.shm_path && a.incarnation == b.incarnation;
}

}  // namespace

Result<int64_t> Engine::OpenSegment(const PeerSegment& desc) {
    auto id = OpenSegmentOnce(desc);
    ReapPeers();  // a descriptor that changed (a restarted owner) leaves its old peer behind
    return id;
}

Result<int64_t> Engine::OpenSegmentOnce(const PeerSegment& desc) {
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
        // The descriptor's, as for a peer's segment: Submit refuses it once it is not the own
        // segment's (renewed, or made again, since the descriptor was read).
        seg->incarnation = desc.incarnation;
    } else {
        if (desc.label == label_) {
            // Same label on another host: mapping "its" path here would map some other file.
            if (desc.host_id != host_id_) return Err::kForeignHost;
            if (!InsideDir(shm_dir_, desc.shm_path)) return Err::kUnknownSegment;
            auto m = ShmMapping::Open(desc.shm_path, desc.size);
            if (!m.ok()) return m.error();
            seg->mapping = std::move(m.value());
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
    {
        std::lock_guard<std::mutex> lock(seg_mu_);
        auto it = segments_.find(id);
        if (it == segments_.end()) return Err::kUnknownSegment;
        segment_ids_.erase(it->second->name);
        segments_.erase(it);
    }
    ReapPeers();
    return Err::kOk;
}

void Engine::ReapPeers() {
    std::vector<std::shared_ptr<TcpPeer>> gone;
    {
        std::lock_guard<std::mutex> lock(seg_mu_);
        for (auto it = peers_.begin(); it != peers_.end();) {
            // Only the map holds it (no segment, no batch waiting to notify through it) and it
            // has no chunk queued or in flight: nobody can hand it work any more.
            if (it->second.use_count() == 1 && it->second->Idle()) {
                gone.push_back(std::move(it->second));
                it = peers_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& p : gone) p->Stop();  // its idle stream threads leave; its sockets close
}

Result<int64_t> Engine::Alloc(int64_t id, int64_t length, bool high) {
    if (closing()) return Err::kClosed;
    auto seg = FindSegment(id);
    if (!seg) return Err::kUnknownSegment;
    if (length <= 0) return Err::kInvalidArgument;
    if (seg->own) return seg->own->Allocate(length, high);
    // A peer's segment: its owner allocates there on a storer's request, and refuses others;
    // where in its segment is the owner's choice.
    if (high) return Err::kInvalidArgument;
    if (role_ != DP_ROLE_STORER) return Err::kDenied;
    return seg->peer->Control(Op::kAlloc, seg->name, 0, length, seg->incarnation);
}

Err Engine::Probe(int64_t id) {
    if (closing()) return Err::kClosed;
    auto seg = FindSegment(id);
    if (!seg) return Err::kUnknownSegment;
    if (seg->own) return seg->incarnation == seg->own->incarnation ? Err::kOk : Err::kStaleSegment;
    // Bytes in a file here: alive while the file is the segment's, not once its owner removed
    // it (closed the segment, or created it afresh under the same name and descriptor), nor once
    // it renewed the segment's incarnation.
    if (seg->mapping) {
        if (seg->mapping->Unlinked()) return Err::kUnknownSegment;
        return seg->mapping->IncarnationIs(seg->incarnation) ? Err::kOk : Err::kStaleSegment;
    }
    return seg->peer->Probe();
}

Err Engine::Free(int64_t id, int64_t offset) {
    if (closing()) return Err::kClosed;
    auto seg = FindSegment(id);
    if (!seg) return Err::kUnknownSegment;
    if (seg->own) return seg->own->allocator->Free(offset);
    auto r = seg->peer->Control(Op::kFree, seg->name, offset, 0, seg->incarnation);
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
        } else if (seg[i]->own
                       ? seg[i]->incarnation != seg[i]->own->incarnation
                       : seg[i]->mapping && !seg[i]->mapping->IncarnationIs(seg[i]->incarnation)) {
            // Addressed to an earlier incarnation (the owner renewed or made the segment again):
            // as the owner's server refuses it over tcp.
            pre[i] = Err::kStaleSegment;
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
    std::map<std::shared_ptr<TcpPeer>, std::vector<TcpJob>> remote;
    // Local copies of the same source bytes to several destinations (a tensor to every worker of
    // a node) are one job per chunk that copies block by block to all of them: the source crosses
    // memory once instead of once per destination.
    struct SameSource {
        const char* src;
        int64_t length;
        std::vector<CopyTarget> targets;
    };
    std::vector<SameSource> fan_outs;
    std::map<std::pair<const char*, int64_t>, size_t> same_source;
    for (int32_t i = 0; i < count; ++i) {
        TaskState& t = b->tasks[i];
        if (pre[i] != Err::kOk || lengths[i] == 0) {
            t.chunks_left.store(1);
            if (b->crc) t.chunk_crc = std::make_unique<uint32_t[]>(1);
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
                    t.chunk_crc = std::make_unique<uint32_t[]>(1);
                    t.chunk_crc[0] = CopyCrc32c(dst, src, len, &spent);
                    b->crc_nanos.fetch_add(spent);
                } else {
                    std::memcpy(dst, src, static_cast<size_t>(len));
                }
                Count(ops[i] == DP_OP_READ ? DP_COUNTER_LOCAL_READ : DP_COUNTER_LOCAL_WRITTEN, len);
                CompleteChunk(b, i, Err::kOk, len);
                continue;
            }
            if (!b->crc || ops[i] != DP_OP_READ) {
                // copied below, with every other task of the same source bytes (a checksummed
                // write's source is summed once for all of them: the CRC32C of what was sent)
                auto at = same_source.try_emplace({src, len}, fan_outs.size());
                if (at.second) fan_outs.push_back(SameSource{src, len, {}});
                fan_outs[at.first->second].targets.push_back(CopyTarget{seg[i], i, dst});
                continue;
            }
            int64_t chunks = (len + kLocalChunk - 1) / kLocalChunk;
            t.chunks_left.store(static_cast<int32_t>(chunks));
            t.chunk_crc = std::make_unique<uint32_t[]>(chunks);
            t.chunk_bytes = kLocalChunk;
            int32_t chunk = 0;
            for (int64_t off = 0; off < len; off += kLocalChunk) {
                int64_t n = std::min(kLocalChunk, len - off);
                copies.push_back(CopyJob{b, seg[i], i, dst + off, src + off, n, chunk++, {}});
            }
        } else {
            t.tcp = true;
            int64_t chunks = (len + kTcpChunk - 1) / kTcpChunk;
            t.chunks_left.store(static_cast<int32_t>(chunks));
            if (b->crc) t.chunk_crc = std::make_unique<uint32_t[]>(chunks);
            t.chunk_bytes = kTcpChunk;
            auto& jobs = remote[seg[i]->peer];
            auto name = std::make_shared<const std::string>(seg[i]->name);
            int32_t chunk = 0;
            for (int64_t off = 0; off < len; off += kTcpChunk) {
                int64_t n = std::min(kTcpChunk, len - off);
                jobs.push_back(TcpJob{b, i, ops[i] == DP_OP_READ ? Op::kRead : Op::kWrite, name,
                                      seg[i]->incarnation, offsets[i] + off, local + off, n,
                                      chunk++});
            }
        }
    }
    for (const SameSource& f : fan_outs) {
        // about kLocalChunk bytes written per job, so the pool still shares a long task
        int64_t per_job = kLocalChunk / static_cast<int64_t>(f.targets.size());
        int64_t chunk = std::max(4 * kCopyBlock, per_job / kCopyBlock * kCopyBlock);
        int64_t chunks = (f.length + chunk - 1) / chunk;
        for (const CopyTarget& to : f.targets) {
            b->tasks[to.task].chunks_left.store(static_cast<int32_t>(chunks));
            b->tasks[to.task].chunk_bytes = chunk;
            if (b->crc) b->tasks[to.task].chunk_crc = std::make_unique<uint32_t[]>(chunks);
        }
        int32_t index = 0;
        for (int64_t off = 0; off < f.length; off += chunk) {
            int64_t n = std::min(chunk, f.length - off);
            const CopyTarget& first = f.targets.front();
            CopyJob job{b, first.segment, first.task, first.dst + off, f.src + off, n, index++, {}};
            job.also.reserve(f.targets.size() - 1);
            for (size_t k = 1; k < f.targets.size(); ++k)
                job.also.push_back(
                    CopyTarget{f.targets[k].segment, f.targets[k].task, f.targets[k].dst + off});
            copies.push_back(std::move(job));
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
    for (auto& r : remote) b->tcp_peers.push_back(r.first);  // before any chunk can complete
    for (auto& r : remote) r.first->Enqueue(std::move(r.second));
    return b;
}

void Engine::CancelBatch(const std::shared_ptr<BatchState>& b) {
    b->cancelled.store(true);
    std::vector<CopyJob> dropped;
    {
        std::lock_guard<std::mutex> lock(copy_->mu);
        for (auto it = copy_->jobs.begin(); it != copy_->jobs.end();) {
            if (it->batch == b) {
                dropped.push_back(std::move(*it));
                it = copy_->jobs.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (const CopyJob& job : dropped) {
        CompleteChunk(job.batch, job.task, Err::kCancelled, 0);
        for (const CopyTarget& to : job.also) CompleteChunk(job.batch, to.task, Err::kCancelled, 0);
    }
    for (auto& weak : b->tcp_peers)
        if (auto peer = weak.lock()) peer->Cancel(b);
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
    try {
        SendNotifies(b, &notify_status);
    } catch (...) {  // out of memory on the way: the batch still finishes, its notify failed
        notify_status = DP_ERR_INTERNAL;
    }
    {
        std::lock_guard<std::mutex> lock(b->mu);
        b->notify_status = notify_status;
        b->done = true;
        b->notify_peers.clear();
    }
    b->cv.notify_all();
}

void Engine::SendNotifies(const std::shared_ptr<BatchState>& b, int32_t* status) {
    int32_t& notify_status = *status;
    if (!b->notify_name.empty()) {
        for (int32_t i = 0; i < b->count && notify_status == DP_OK; ++i) {
            std::lock_guard<std::mutex> lock(b->mu);
            notify_status = b->tasks[i].final_status;
        }
        if (notify_status == DP_OK) {
            if (b->notify_self) BumpNotify(b->notify_name);  // dropped unless registered
            for (auto& p : b->notify_peers) {
                auto r = p->Control(Op::kNotify, b->notify_name, 0, 0, 0);
                if (!r.ok() && notify_status == DP_OK) {
                    notify_status = Code(r.error());
                    std::lock_guard<std::mutex> lock(b->mu);
                    b->notify_failed = p->Endpoint();
                }
            }
        }
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
