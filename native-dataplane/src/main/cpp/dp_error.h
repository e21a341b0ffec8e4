// The data plane's error model: Err (the C API's codes), Result (a value or an error) and the
// overflow-safe bounds check every request goes through.
#ifndef WEIGHT_RELAY_DP_ERROR_H_
#define WEIGHT_RELAY_DP_ERROR_H_

#include <cstdint>
#include <utility>

#include "dp.h"

namespace dp {

enum class Err : int32_t {
    kOk = DP_OK,
    kInvalidArgument = DP_ERR_INVALID_ARGUMENT,
    kUnknownSegment = DP_ERR_UNKNOWN_SEGMENT,
    kOutOfBounds = DP_ERR_OUT_OF_BOUNDS,
    kUnregisteredBuffer = DP_ERR_UNREGISTERED_BUFFER,
    kPeerGone = DP_ERR_PEER_GONE,
    kShortTransfer = DP_ERR_SHORT_TRANSFER,
    kSegmentFull = DP_ERR_SEGMENT_FULL,
    kTimeout = DP_ERR_TIMEOUT,
    kIo = DP_ERR_IO,
    kExists = DP_ERR_EXISTS,
    kNotFound = DP_ERR_NOT_FOUND,
    kClosed = DP_ERR_CLOSED,
    kInternal = DP_ERR_INTERNAL,
    kDenied = DP_ERR_DENIED,
    kForeignHost = DP_ERR_FOREIGN_HOST,
    kProtocol = DP_ERR_PROTOCOL,
    kReadOnly = DP_ERR_READ_ONLY,
    kStaleSegment = DP_ERR_STALE_SEGMENT,
    kCancelled = DP_ERR_CANCELLED,
};

inline int Code(Err e) { return static_cast<int>(e); }

// A value or an error code: the expected-style return used across the engine.
template <typename T>
class Result {
 public:
    Result(T value) : value_(std::move(value)), err_(Err::kOk) {}  // NOLINT
    Result(Err err) : value_(), err_(err) {}                       // NOLINT
    bool ok() const { return err_ == Err::kOk; }
    Err error() const { return err_; }
    T& value() { return value_; }
    const T& value() const { return value_; }

 private:
    T value_;
    Err err_;
};

// True when [offset, offset + length) lies inside [0, size), overflow-safe.
inline bool InBounds(int64_t offset, int64_t length, int64_t size) {
    return offset >= 0 && length >= 0 && offset <= size && length <= size - offset;
}

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_ERROR_H_
