// The copy pool of the local transport (see dp_local_copy.h).
#include "dp_local_copy.h"

#include <algorithm>
#include <cstring>

#include "dp_crc32c.h"
#include "dp_engine.h"

namespace dp {

void Engine::RunCopy(const CopyJob& job) {
    TaskState& t = job.batch->tasks[job.task];
    if (t.chunk_crc) {
        int64_t spent = 0;
        t.chunk_crc[job.chunk] = CopyCrc32c(job.dst, job.src, job.length, &spent);
        job.batch->crc_nanos.fetch_add(spent);
    } else if (job.also.empty()) {
        std::memcpy(job.dst, job.src, static_cast<size_t>(job.length));
    } else {
        for (int64_t off = 0; off < job.length; off += kCopyBlock) {
            size_t n = static_cast<size_t>(std::min(kCopyBlock, job.length - off));
            std::memcpy(job.dst + off, job.src + off, n);
            for (const CopyTarget& to : job.also) std::memcpy(to.dst + off, job.src + off, n);
        }
    }
    auto complete = [&](int32_t task) {
        Count(job.batch->tasks[task].op == DP_OP_READ ? DP_COUNTER_LOCAL_READ
                                                      : DP_COUNTER_LOCAL_WRITTEN,
              job.length);
        CompleteChunk(job.batch, task, Err::kOk, job.length);
    };
    complete(job.task);
    for (const CopyTarget& to : job.also) complete(to.task);
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
