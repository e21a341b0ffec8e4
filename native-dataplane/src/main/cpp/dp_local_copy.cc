// The copy pool of the local transport (see dp_local_copy.h).
#include "dp_local_copy.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "dp_crc32c.h"
#include "dp_engine.h"

namespace dp {

namespace {

// Copies with non-temporal stores: a chunk's destination (a worker's buffer, another staging) is
// not read again soon, so its lines are written without being read first (no read for ownership)
// and without evicting the source block the next destination copies from. Unaligned head and tail
// bytes go through memcpy.
void StreamCopy(char* dst, const char* src, size_t n) {
#if defined(__x86_64__)
    size_t head = std::min(n, static_cast<size_t>(-reinterpret_cast<uintptr_t>(dst) & 63));
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t body = n & ~static_cast<size_t>(63);
    for (size_t i = 0; i < body; i += 64) {
        const __m128i* from = reinterpret_cast<const __m128i*>(src + i);
        __m128i* to = reinterpret_cast<__m128i*>(dst + i);
        __m128i a = _mm_loadu_si128(from);
        __m128i b = _mm_loadu_si128(from + 1);
        __m128i c = _mm_loadu_si128(from + 2);
        __m128i d = _mm_loadu_si128(from + 3);
        _mm_stream_si128(to, a);
        _mm_stream_si128(to + 1, b);
        _mm_stream_si128(to + 2, c);
        _mm_stream_si128(to + 3, d);
    }
    std::memcpy(dst + body, src + body, n - body);
#else
    std::memcpy(dst, src, n);
#endif
}

// Orders the non-temporal stores before whatever publishes their completion.
void StreamFence() {
#if defined(__x86_64__)
    _mm_sfence();
#endif
}

// The CRC32C of a write's source bytes, taken block by block just before each block is copied with
// non-temporal stores: the source is read from memory once (the copy reads it from the cache the
// checksum brought it into) and the destination is written without being read first. A write's
// receiver proves what landed by reading its buffer itself, so the sender's checksum is of what it
// sent. A read's checksum stays that of its destination (CopyCrc32c): its staging is what the
// loader proves against the published checksums, and what it pushes on from.
// Every further target of the job gets the same block from the cache.
uint32_t Crc32cStreamCopy(const CopyJob& job, int64_t* crc_nanos) {
    constexpr int64_t kBlock = 3 * crc32c_detail::kLong * 4;  // 96 KiB: in L2
    uint32_t crc = 0;
    int64_t spent = 0;
    for (int64_t off = 0; off < job.length; off += kBlock) {
        int64_t m = job.length - off < kBlock ? job.length - off : kBlock;
        int64_t t0 = Crc32cNow();
        crc = Crc32cUpdate(crc, job.src + off, m);
        spent += Crc32cNow() - t0;
        StreamCopy(job.dst + off, job.src + off, static_cast<size_t>(m));
        for (const CopyTarget& to : job.also)
            StreamCopy(to.dst + off, job.src + off, static_cast<size_t>(m));
    }
    StreamFence();  // the bytes are visible before the chunk counts as done
    *crc_nanos += spent;
    return crc;
}

}  // namespace

std::atomic<void (*)(const CopyJob&)> copy_fault_for_tests{nullptr};

// Never throws: a chunk whose copy fails (an exception from anything it calls) fails its tasks
// with kInternal and says why in each task's message; the thread, and the process, go on.
void Engine::RunCopy(const CopyJob& job) {
    TaskState& t = job.batch->tasks[job.task];
    bool failed = false;
    std::string failure;
    if (job.batch->cancelled.load()) {  // taken from the queue as its batch was cancelled
        CompleteChunk(job.batch, job.task, Err::kCancelled, 0);
        for (const CopyTarget& to : job.also) CompleteChunk(job.batch, to.task, Err::kCancelled, 0);
        return;
    }
    try {
        if (auto fault = copy_fault_for_tests.load()) fault(job);
        if (t.chunk_crc) {
            int64_t spent = 0;
            if (t.op == DP_OP_READ) {
                t.chunk_crc[job.chunk] = CopyCrc32c(job.dst, job.src, job.length, &spent);
            } else {
                uint32_t crc = Crc32cStreamCopy(job, &spent);
                t.chunk_crc[job.chunk] = crc;
                for (const CopyTarget& to : job.also)
                    job.batch->tasks[to.task].chunk_crc[job.chunk] = crc;
            }
            job.batch->crc_nanos.fetch_add(spent);
        } else {
            for (int64_t off = 0; off < job.length; off += kCopyBlock) {
                size_t n = static_cast<size_t>(std::min(kCopyBlock, job.length - off));
                StreamCopy(job.dst + off, job.src + off, n);
                for (const CopyTarget& to : job.also) StreamCopy(to.dst + off, job.src + off, n);
            }
            StreamFence();  // the bytes are visible before the chunk counts as done
        }
    } catch (const std::exception& e) {
        failed = true;
        try {
            failure = e.what();
        } catch (...) {  // no memory for the message: the code still says it failed
        }
    } catch (...) {
        failed = true;
    }
    auto complete = [&](int32_t task) {
        if (failed) {
            job.batch->Fail(task, "the local copy failed: ", failure);
            CompleteChunk(job.batch, task, Err::kInternal, 0);
            return;
        }
        Count(job.batch->tasks[task].op == DP_OP_READ ? DP_COUNTER_LOCAL_READ
                                                      : DP_COUNTER_LOCAL_WRITTEN,
              job.length);
        CompleteChunk(job.batch, task, Err::kOk, job.length);
    };
    complete(job.task);
    for (const CopyTarget& to : job.also) complete(to.task);
}

void Engine::CopyLoop() {
    NameThread("dp-copy");
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

void HelpCopy(const std::shared_ptr<BatchState>& b) {
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

}  // namespace dp
