// Internal C++ building blocks of the data plane: RAII handles, shared-memory mappings and
// blocking socket helpers (the error model is dp_error.h, the segment allocator dp_allocator.h).
#ifndef WEIGHT_RELAY_DP_INTERNAL_H_
#define WEIGHT_RELAY_DP_INTERNAL_H_

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "dp.h"
#include "dp_allocator.h"
#include "dp_crc32c.h"
#include "dp_error.h"

namespace dp {

// Owns a file descriptor.
class Fd {
 public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            Reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~Fd() { Reset(); }
    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    int Release() { return std::exchange(fd_, -1); }
    void Reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

 private:
    int fd_ = -1;
};

// An exclusive flock() on the shm directory itself. Every change of which file a segment's path
// names (creating, replacing, an owner's unlink, reclaiming an orphan) happens under it, and each
// holds it only for a few system calls (never while pages are reserved or mapped): so reclaiming
// never unlinks a path that a live owner has just re-created. A flock is per inode, so it holds
// across processes, containers and network namespaces that share the directory.
class ShmDirLock {
 public:
    explicit ShmDirLock(const std::string& dir)
        : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        while (fd_.valid() && ::flock(fd_.get(), LOCK_EX) != 0) {
            if (errno != EINTR) fd_.Reset();
        }
    }
    bool held() const { return fd_.valid(); }
    int dir_fd() const { return fd_.get(); }

 private:
    Fd fd_;  // closing it releases the lock
};

// The sidecar of a segment file: `<segment file>.owner`, beside it in the same directory. The
// segment file itself holds exactly the segment's bytes (a compat receive segment is the
// safetensors file an engine's loader opens, byte for byte), so whatever says who owns it lives
// here. The process that made the segment holds an exclusive flock() on its sidecar for as long as
// it owns the segment; the kernel drops it when that process exits, however it dies (SIGKILL, the
// OOM killer), whatever its pid or network namespace. A sidecar holds one OwnerRecord naming the
// segment file's device and inode, checksummed, so a file some other program made (no sidecar),
// a copy of a segment file (another inode) or a file that happens to hold the magic never passes
// for a segment file of a dead owner. After the record, the owner keeps the segment's current
// incarnation (8 bytes at kIncarnationAt): peers that map the file compare it with the descriptor
// they were given, so a segment whose owner renewed its incarnation (dp_segment_renew) refuses
// what is addressed to the earlier one on the local transport too, as its server does over tcp.
inline std::string OwnerFileOf(const std::string& segment_file) { return segment_file + ".owner"; }

struct OwnerRecord {
    char magic[8];  // "WROWNv1"
    int64_t size;   // the segment's bytes (the segment file's size when it was made)
    uint64_t device;
    uint64_t inode;
    uint32_t reserved;  // 0
    uint32_t crc;       // CRC32C of the bytes before it

    static constexpr char kMagic[8] = {'W', 'R', 'O', 'W', 'N', 'v', '1', 0};

    static OwnerRecord For(int64_t size, const struct stat& segment_file) {
        OwnerRecord r{};
        std::memcpy(r.magic, kMagic, sizeof kMagic);
        r.size = size;
        r.device = static_cast<uint64_t>(segment_file.st_dev);
        r.inode = static_cast<uint64_t>(segment_file.st_ino);
        r.crc = r.Sum();
        return r;
    }
    bool Valid() const {
        return std::memcmp(magic, kMagic, sizeof kMagic) == 0 && reserved == 0 && crc == Sum();
    }
    bool Names(const struct stat& file) const {
        return device == static_cast<uint64_t>(file.st_dev) &&
               inode == static_cast<uint64_t>(file.st_ino);
    }

 private:
    uint32_t Sum() const { return Crc32cUpdate(0, this, offsetof(OwnerRecord, crc)); }
};
static_assert(sizeof(OwnerRecord) == 40, "the sidecar's layout is part of the file format");
// Where the owner keeps the segment's incarnation in its sidecar, right after the record.
constexpr off_t kIncarnationAt = sizeof(OwnerRecord);

inline bool SameFile(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Owns a MAP_SHARED mapping of a shared-memory file.
class ShmMapping {
 public:
    ShmMapping(void* base, int64_t size) : base_(base), size_(size) {}
    ShmMapping(const ShmMapping&) = delete;
    ShmMapping& operator=(const ShmMapping&) = delete;
    ~ShmMapping() {
        if (base_ == nullptr) return;
        if (detach_on_release_) {
            // Java may still hold a ByteBuffer view of an own segment: swap the shared pages
            // for private zero pages at the same address so a stale access reads zeros
            // instead of crashing the JVM. Only address space stays reserved.
            void* p = ::mmap(base_, static_cast<size_t>(size_), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
            if (p != MAP_FAILED) return;
        }
        ::munmap(base_, static_cast<size_t>(size_));
    }
    // Makes the destructor leave harmless private memory behind instead of unmapping.
    void DetachOnRelease() { detach_on_release_ = true; }
    char* base() const { return static_cast<char*>(base_); }
    int64_t size() const { return size_; }

    // Creates a new file at path (directly inside dir) holding exactly the size bytes of the
    // segment (O_EXCL: an existing file, which live peers may still map, is never truncated or
    // reused; replace unlinks it and its sidecar first, so those peers keep their pages and see
    // the file gone), reserves its pages (fallocate: a full /dev/shm is an error here, never a
    // SIGBUS later) and maps it pre-faulted. Its sidecar (OwnerFileOf) is made first and flock()ed
    // before the segment file exists, and stays locked until this mapping is destroyed or the
    // process dies: the ownership lock. All of it under the directory lock, so no reclaimer ever
    // sees a segment file whose sidecar is not yet written.
    static Result<std::unique_ptr<ShmMapping>> Create(const std::string& dir,
                                                      const std::string& path, int64_t size,
                                                      bool replace) {
        const std::string owner_path = OwnerFileOf(path);
        Fd owner;
        Fd fd;
        {
            ShmDirLock dir_lock(dir);
            if (!dir_lock.held()) return Err::kIo;
            if (replace && ::unlink(path.c_str()) != 0 && errno != ENOENT) return Err::kIo;
            if (replace && ::unlink(owner_path.c_str()) != 0 && errno != ENOENT) return Err::kIo;
            owner = Fd(::open(owner_path.c_str(),
                              O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
            if (!owner.valid()) return errno == EEXIST ? Err::kExists : Err::kIo;
            // Nobody else has the new sidecar open: the lock is ours at once.
            if (::flock(owner.get(), LOCK_EX | LOCK_NB) != 0) {
                ::unlink(owner_path.c_str());
                return Err::kIo;
            }
            fd = Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
            if (!fd.valid()) {
                Err e = errno == EEXIST ? Err::kExists : Err::kIo;
                ::unlink(owner_path.c_str());
                return e;
            }
            struct stat st {};
            OwnerRecord r{};
            if (::fstat(fd.get(), &st) == 0) r = OwnerRecord::For(size, st);
            if (!r.Valid() ||
                ::pwrite(owner.get(), &r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) {
                ::unlink(path.c_str());
                ::unlink(owner_path.c_str());
                return Err::kIo;
            }
        }
        Err e = Err::kOk;
        if (::ftruncate(fd.get(), size) != 0) e = Err::kIo;
        if (e == Err::kOk && ::posix_fallocate(fd.get(), 0, size) != 0) e = Err::kSegmentFull;
        if (e != Err::kOk) {
            UnlinkIfSame(dir, path, fd.get(), owner.get());
            return e;
        }
        auto m = Map(fd.get(), size);
        if (!m.ok()) {
            UnlinkIfSame(dir, path, fd.get(), owner.get());
            return m;
        }
        m.value()->file_ = std::move(fd);
        m.value()->owner_ = std::move(owner);
        return m;
    }

    // Removes the file of an own segment (its path), then its sidecar, each unless its name
    // names another file by now (another engine took the name over): an owner only ever unlinks
    // its own files. The ownership lock goes when this mapping is destroyed.
    void UnlinkOwnFile(const std::string& dir, const std::string& path) const {
        if (file_.valid() && owner_.valid()) UnlinkIfSame(dir, path, file_.get(), owner_.get());
    }

    // Maps an existing file of a peer (same host) that must hold at least size bytes: a regular
    // file of this user, never through a symbolic link. Its sidecar is kept open (never locked) to
    // read the incarnation its owner keeps there (IncarnationIs).
    static Result<std::unique_ptr<ShmMapping>> Open(const std::string& path, int64_t size) {
        Fd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
        if (!fd.valid()) return Err::kUnknownSegment;
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0) return Err::kIo;
        if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return Err::kUnknownSegment;
        if (st.st_size < size) return Err::kUnknownSegment;
        Fd sidecar(::open(OwnerFileOf(path).c_str(),
                          O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
        auto m = Map(fd.get(), size);
        if (m.ok()) {
            m.value()->file_ = std::move(fd);
            m.value()->sidecar_ = std::move(sidecar);
        }
        return m;
    }

    // Owner side: keeps incarnation in the sidecar, where peers that map the file read it.
    bool PublishIncarnation(uint64_t incarnation) const {
        return owner_.valid() &&
               ::pwrite(owner_.get(), &incarnation, sizeof incarnation, kIncarnationAt) ==
                   static_cast<ssize_t>(sizeof incarnation);
    }

    // Peer side: false once the owner keeps another incarnation than the one given (it renewed the
    // segment since that descriptor was read). True when there is nothing to compare with: a file
    // mapped without its sidecar, or an owner that keeps no incarnation there (an older data
    // plane); such a file is still fenced by being unlinked when it is made again.
    bool IncarnationIs(uint64_t incarnation) const {
        if (!sidecar_.valid()) return true;
        uint64_t kept = 0;
        if (::pread(sidecar_.get(), &kept, sizeof kept, kIncarnationAt) !=
            static_cast<ssize_t>(sizeof kept))
            return true;
        return kept == incarnation;
    }

    // True once the owner removed the file (closed its segment): the pages mapped here are
    // no longer the segment anyone else sees.
    bool Unlinked() const {
        struct stat st {};
        return file_.valid() && ::fstat(file_.get(), &st) == 0 && st.st_nlink == 0;
    }

 private:
    // Unlinks path (inside dir) if it still names the file open as fd, then its sidecar if that
    // still names the file open as owner, under the directory lock so that no other engine makes
    // either name another file in between. Segment first: a segment file never lacks a sidecar.
    static void UnlinkIfSame(const std::string& dir, const std::string& path, int fd, int owner) {
        ShmDirLock dir_lock(dir);
        if (!dir_lock.held()) return;
        struct stat mine {};
        struct stat named {};
        if (::fstat(fd, &mine) == 0 && ::lstat(path.c_str(), &named) == 0 && SameFile(mine, named))
            ::unlink(path.c_str());
        const std::string owner_path = OwnerFileOf(path);
        if (::fstat(owner, &mine) == 0 && ::lstat(owner_path.c_str(), &named) == 0 &&
            SameFile(mine, named))
            ::unlink(owner_path.c_str());
    }

    static Result<std::unique_ptr<ShmMapping>> Map(int fd, int64_t size) {
        if (size == 0) return std::make_unique<ShmMapping>(nullptr, 0);
        void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_POPULATE, fd, 0);
        if (p == MAP_FAILED) return Err::kIo;
        return std::make_unique<ShmMapping>(p, size);
    }

    void* base_;
    int64_t size_;
    bool detach_on_release_ = false;
    Fd file_;     // kept open for peer mappings, to notice when the owner unlinks the file
    Fd owner_;    // own segments: the sidecar, flock()ed until the segment is destroyed
    Fd sidecar_;  // peer mappings: the owner's sidecar, read for the incarnation it keeps
};

// Unlinks the sidecar `owner_name` inside `dir_fd` if that name still names the file `own`.
inline void UnlinkSidecarIfSame(int dir_fd, const std::string& owner_name, const struct stat& own) {
    struct stat named {};
    if (::fstatat(dir_fd, owner_name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        SameFile(own, named))
        ::unlinkat(dir_fd, owner_name.c_str(), 0);
}

// The part of ReclaimOrphanedSegmentFile for an empty sidecar (`owner`, open as `own`), under the
// directory lock of `dir_fd`: nobody may hold its lock, and the segment file goes only when it is a
// regular file of this user with no byte (made, never sized).
inline Err ReclaimUnwrittenSidecar(int dir_fd, const std::string& name, const Fd& owner,
                                   const struct stat& own, int64_t* bytes) {
    if (::flock(owner.get(), LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK ? Err::kExists : Err::kIo;
    Err result = Err::kNotFound;
    struct stat seg {};
    if (::fstatat(dir_fd, name.c_str(), &seg, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(seg.st_mode) &&
        seg.st_uid == ::geteuid() && seg.st_size == 0) {
        if (::unlinkat(dir_fd, name.c_str(), 0) != 0) return Err::kIo;
        *bytes = 0;
        result = Err::kOk;
    }
    UnlinkSidecarIfSame(dir_fd, OwnerFileOf(name), own);
    return result;
}

// Removes the segment file `name` inside `dir`, and its sidecar, when the sidecar is valid, still
// names that very file (device and inode) and nobody holds its lock: the owner is gone (the kernel
// released the lock when it exited, however it died). kOk: removed, *bytes is the segment file's
// size; kExists: its owner is alive, nothing touched; kNotFound: no valid sidecar of this user
// (a file some other program made, a staging file, a link), never touched. A valid unlocked
// sidecar whose segment file is gone or is another file by now is removed alone (kNotFound: no
// segment was reclaimed). An empty unlocked sidecar of this user is what a creator killed before
// writing its record leaves (Create writes it under the directory lock, so no live creator is
// ever seen half-way): it goes, with the segment file only if that is still empty (kOk, 0 bytes).
// Under the directory lock, so no live owner re-creates either name between the check and the
// unlink.
inline Err ReclaimOrphanedSegmentFile(const std::string& dir, const std::string& name,
                                      int64_t* bytes) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
        return Err::kInvalidArgument;
    const std::string owner_name = OwnerFileOf(name);
    ShmDirLock dir_lock(dir);
    if (!dir_lock.held()) return Err::kIo;
    // O_NONBLOCK: a fifo of that name must not block us; O_NOFOLLOW: a link is never followed.
    Fd owner(::openat(dir_lock.dir_fd(), owner_name.c_str(),
                      O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (!owner.valid()) return Err::kNotFound;
    struct stat own {};
    if (::fstat(owner.get(), &own) != 0 || !S_ISREG(own.st_mode) || own.st_uid != ::geteuid())
        return Err::kNotFound;
    if (own.st_size == 0)
        return ReclaimUnwrittenSidecar(dir_lock.dir_fd(), name, owner, own, bytes);
    // The record, and after it the incarnation its owner kept (absent while it was being made).
    if (own.st_size != static_cast<off_t>(sizeof(OwnerRecord)) &&
        own.st_size != static_cast<off_t>(kIncarnationAt + sizeof(uint64_t)))
        return Err::kNotFound;
    OwnerRecord r{};
    if (::pread(owner.get(), &r, sizeof r, 0) != static_cast<ssize_t>(sizeof r) || !r.Valid())
        return Err::kNotFound;
    if (::flock(owner.get(), LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK ? Err::kExists : Err::kIo;
    Err result = Err::kNotFound;
    struct stat seg {};
    if (::fstatat(dir_lock.dir_fd(), name.c_str(), &seg, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(seg.st_mode) && seg.st_uid == ::geteuid() && r.Names(seg)) {
        if (::unlinkat(dir_lock.dir_fd(), name.c_str(), 0) != 0) return Err::kIo;
        *bytes = seg.st_size;
        result = Err::kOk;
    }
    UnlinkSidecarIfSame(dir_lock.dir_fd(), owner_name, own);
    return result;
}

// Sends exactly n bytes (never raises SIGPIPE). kPeerGone on a closed or stalled peer.
inline Err SendAll(int fd, const void* data, int64_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        ssize_t k = ::send(fd, p, static_cast<size_t>(n), MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return Err::kPeerGone;
        }
        p += k;
        n -= k;
    }
    return Err::kOk;
}

// Sends every byte of iov[0..count) with as few system calls as the socket allows (one sendmsg
// when it takes them all): a header and its payload leave together, not as two segments. The
// iovecs are advanced in place. kPeerGone on reset or timeout.
inline Err SendAllV(int fd, struct iovec* iov, int count) {
    while (count > 0) {
        struct msghdr m {};
        m.msg_iov = iov;
        m.msg_iovlen = static_cast<size_t>(count);
        ssize_t k = ::sendmsg(fd, &m, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return Err::kPeerGone;
        }
        while (count > 0 && static_cast<size_t>(k) >= iov->iov_len) {
            k -= static_cast<ssize_t>(iov->iov_len);
            ++iov;
            --count;
        }
        if (count > 0) {
            iov->iov_base = static_cast<char*>(iov->iov_base) + k;
            iov->iov_len -= static_cast<size_t>(k);
        }
    }
    return Err::kOk;
}

// Receives exactly n bytes. kPeerGone on EOF, reset or timeout.
inline Err RecvAll(int fd, void* data, int64_t n) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
        ssize_t k = ::recv(fd, p, static_cast<size_t>(n), 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return Err::kPeerGone;
        p += k;
        n -= k;
    }
    return Err::kOk;
}

// RecvAll that gives up at an absolute deadline (kTimeout), however the bytes trickle in: a peer
// sending one byte just before each receive timeout cannot stretch it.
inline Err RecvAllBy(int fd, void* data, int64_t n,
                     std::chrono::steady_clock::time_point deadline) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) return Err::kTimeout;
        struct pollfd w = {fd, POLLIN, 0};
        int rc = ::poll(&w, 1, static_cast<int>(std::min<int64_t>(left, INT32_MAX)));
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) return Err::kPeerGone;
        if (rc == 0) return Err::kTimeout;
        ssize_t k = ::recv(fd, p, static_cast<size_t>(n), MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (k <= 0) return Err::kPeerGone;
        p += k;
        n -= k;
    }
    return Err::kOk;
}

// Names the calling thread (at most 15 characters) so that ps, top, perf and the tests tell the
// engine's threads apart: dp-accept, dp-conn, dp-copy, dp-stream.
inline void NameThread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

// RecvAll that also returns the CRC32C of the n bytes, taken of each receive while it is in cache
// (at most 256 KiB a call, so what one call returns still fits in L2).
// Adds the time spent summing to *crc_nanos.
inline Err RecvAllCrc32c(int fd, void* data, int64_t n, uint32_t* crc_out, int64_t* crc_nanos) {
    constexpr int64_t kPiece = 256 << 10;
    char* p = static_cast<char*>(data);
    uint32_t crc = 0;
    while (n > 0) {
        ssize_t k = ::recv(fd, p, static_cast<size_t>(n < kPiece ? n : kPiece), 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return Err::kPeerGone;
        int64_t t0 = Crc32cNow();
        crc = Crc32cUpdate(crc, p, k);
        *crc_nanos += Crc32cNow() - t0;
        p += k;
        n -= k;
    }
    *crc_out = crc;
    return Err::kOk;
}

// Reads and drops n bytes (payload of a rejected request keeps the stream in sync).
// True when path names an entry directly inside the directory whose real path is real_dir (no
// "..", no separator in the name, its directory resolving to real_dir): a descriptor or caller
// can never make the engine create or map a file elsewhere.
inline bool InsideDir(const std::string& real_dir, const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos || real_dir.empty()) return false;
    std::string base = path.substr(slash + 1);
    if (base.empty() || base == "." || base == "..") return false;
    std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    char* real = ::realpath(dir.c_str(), nullptr);
    if (real == nullptr) return false;
    bool inside = real_dir == real;
    std::free(real);
    return inside;
}

inline Err Discard(int fd, int64_t n) {
    char sink[65536];
    while (n > 0) {
        int64_t k = n < static_cast<int64_t>(sizeof sink) ? n : static_cast<int64_t>(sizeof sink);
        Err e = RecvAll(fd, sink, k);
        if (e != Err::kOk) return e;
        n -= k;
    }
    return Err::kOk;
}

// No delay, keepalive (a vanished host is noticed in about a minute, not never) and, when
// timeout_ms > 0, send and receive timeouts.
inline void TuneSocket(int fd, int timeout_ms) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    int idle = 30, interval = 10, count = 3;
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    if (timeout_ms > 0) {
        struct timeval tv {};
        tv.tv_sec = timeout_ms / 1000;
        tv.tv_usec = (timeout_ms % 1000) * 1000;
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
}

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_INTERNAL_H_
