// The segment allocator: where a store segment's objects live.
#ifndef WEIGHT_RELAY_DP_ALLOCATOR_H_
#define WEIGHT_RELAY_DP_ALLOCATOR_H_

#include <climits>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>

#include "dp_error.h"

namespace dp {

// First-fit allocator over [0, size) with coalescing frees. Thread safe.
//
// An allocation is made low (at the start of the lowest hole that fits) or high (at the end of
// the highest). A store segment that holds two generations at once (the active one and the one
// being published) places them at alternate ends: each generation's objects then stay together,
// and the room one leaves when collected is one hole, never holes between the next one's objects.
//
// An allocation is known by its key (the offset Allocate returned, or a piece's start after
// Carve) and covers an extent: the bytes that go back to the free list when it is freed. Free
// holes always start and end on kAlignment, so every Allocate result is aligned.
class SegmentAllocator {
 public:
    static constexpr int64_t kAlignment = 64;

    explicit SegmentAllocator(int64_t size) {
        if (size > 0) free_[0] = size;
        free_bytes_ = size;
    }

    Result<int64_t> Allocate(int64_t length, bool high = false) {
        if (length <= 0) return Err::kInvalidArgument;
        if (length > INT64_MAX - kAlignment) return Err::kSegmentFull;
        int64_t rounded = AlignUp(length);
        std::lock_guard<std::mutex> lock(mu_);
        if (high) {
            for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
                if (it->second < rounded) continue;
                it->second -= rounded;  // holes end aligned, so the block starts aligned
                int64_t offset = it->first + it->second;
                if (it->second == 0) free_.erase(std::next(it).base());
                used_[offset] = Extent{offset, rounded};
                free_bytes_ -= rounded;
                return offset;
            }
            return Err::kSegmentFull;
        }
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->second < rounded) continue;
            int64_t offset = it->first;
            int64_t rest = it->second - rounded;
            free_.erase(it);
            if (rest > 0) free_[offset + rounded] = rest;
            used_[offset] = Extent{offset, rounded};
            free_bytes_ -= rounded;
            return offset;
        }
        return Err::kSegmentFull;
    }

    Err Free(int64_t key) {
        std::lock_guard<std::mutex> lock(mu_);
        auto used = used_.find(key);
        if (used == used_.end()) return Err::kNotFound;
        Extent e = used->second;
        used_.erase(used);
        Release(e.begin, e.length);
        return Err::kOk;
    }

    // Turns the allocation `key` into count allocations keyed by starts[i], each holding at
    // least [starts[i], starts[i] + lengths[i]), and frees the rest of its extent. Pieces must
    // be sorted, disjoint, non-empty and inside the extent, and the extent aligned at both ends (as
    // Allocate makes it); otherwise nothing changes
    // (kInvalidArgument). count 0 frees the whole allocation. This is how bytes written in
    // place into one reserved block become separately freeable objects.
    Err Carve(int64_t key, int32_t count, const int64_t* starts, const int64_t* lengths) {
        if (count < 0 || (count > 0 && (!starts || !lengths))) return Err::kInvalidArgument;
        std::lock_guard<std::mutex> lock(mu_);
        auto used = used_.find(key);
        if (used == used_.end()) return Err::kNotFound;
        const Extent block = used->second;
        const int64_t block_end = block.begin + block.length;
        // Only a block as Allocate made it (aligned at both ends) can be carved, so every hole
        // this frees stays aligned.
        if (block.begin != AlignDown(block.begin) || block_end != AlignDown(block_end)) {
            return Err::kInvalidArgument;
        }
        int64_t previous_end = block.begin;
        for (int32_t i = 0; i < count; ++i) {
            if (lengths[i] <= 0 || starts[i] < previous_end || starts[i] > block_end - lengths[i]) {
                return Err::kInvalidArgument;
            }
            previous_end = starts[i] + lengths[i];
        }
        used_.erase(used);
        // Walk the gaps between pieces: the aligned middle of a gap is freed, its unaligned
        // edges stay with the piece before (or after, for the gap before the first piece).
        int64_t cursor = block.begin;  // where the next piece's extent begins
        for (int32_t i = 0; i <= count; ++i) {
            int64_t gap_begin = i == 0 ? block.begin : AlignUp(starts[i - 1] + lengths[i - 1]);
            int64_t gap_end = i == count ? block_end : AlignDown(starts[i]);
            int64_t piece_end;  // where the previous piece's extent ends
            int64_t next_begin;
            if (gap_begin < gap_end) {
                Release(gap_begin, gap_end - gap_begin);
                piece_end = gap_begin;
                next_begin = gap_end;
            } else {
                piece_end = i == count ? block_end : starts[i];
                next_begin = i == 0 ? block.begin : piece_end;  // the first piece takes the head
            }
            if (i > 0) used_[starts[i - 1]] = Extent{cursor, piece_end - cursor};
            cursor = next_begin;
        }
        return Err::kOk;
    }

    int64_t FreeBytes() {
        std::lock_guard<std::mutex> lock(mu_);
        return free_bytes_;
    }

 private:
    struct Extent {
        int64_t begin;
        int64_t length;
    };

    static int64_t AlignUp(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }
    static int64_t AlignDown(int64_t v) { return v / kAlignment * kAlignment; }

    // Returns [offset, offset + length) to the free list, merged with its neighbours.
    // Requires mu_.
    void Release(int64_t offset, int64_t length) {
        free_bytes_ += length;
        auto next = free_.lower_bound(offset);
        if (next != free_.end() && next->first == offset + length) {
            length += next->second;
            next = free_.erase(next);
        }
        if (next != free_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == offset) {
                prev->second += length;
                return;
            }
        }
        free_[offset] = length;
    }

    std::mutex mu_;                    // guards free_, used_ and free_bytes_; a leaf lock
    std::map<int64_t, int64_t> free_;  // offset -> length
    std::map<int64_t, Extent> used_;   // key -> extent
    int64_t free_bytes_ = 0;
};

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_ALLOCATOR_H_
