// The benchmark's yardsticks (see dp_bench.h), on the data plane's socket helpers.
#include "dp_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "dp.h"
#include "dp_internal.h"

namespace {

// No C++ exception unwinds into C or the JVM.
template <typename F>
int Guard(F&& body) {
    try {
        return body();
    } catch (...) {
        return DP_ERR_INTERNAL;
    }
}

double Seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

extern "C" {

int dp_bench_memcpy(int64_t dst, int64_t src, int64_t length, int32_t repeats, double* gbps_out) {
    return Guard([&] {
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
    return Guard([&] {
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
