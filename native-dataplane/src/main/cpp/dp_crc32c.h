/*
 * CRC32C (Castagnoli) for the data plane: the checksum a reader takes of the bytes it moves, fused
 * with the copy or the receive so that they are summed while still in cache, not read again later.
 *
 * Crc32cUpdate runs on the SSE4.2 crc32 instruction in three interleaved streams (the instruction
 * has a latency of three cycles and a throughput of one, so one stream would use a third of it),
 * whose registers are merged with precomputed "shift by n zero bytes" tables, as in Mark Adler's
 * crc32c.c. Without SSE4.2 a byte-wise table is used. Crc32cCombine gives the CRC32C of A || B
 * from those of A and B and the length of B (zlib's crc32_combine for this polynomial), so chunks
 * of one task moved by different threads are summed apart and combined in order.
 */
#ifndef WEIGHT_RELAY_DP_CRC32C_H_
#define WEIGHT_RELAY_DP_CRC32C_H_

#include <stdint.h>

#include <chrono>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace dp {

namespace crc32c_detail {

constexpr uint32_t kPoly = 0x82f63b78;  // reflected
constexpr int64_t kLong = 8192;         // bytes per stream of a long round
constexpr int64_t kShort = 256;         // bytes per stream of a short round

// a * b modulo the polynomial, both reflected (bit 31 is x^0).
inline uint32_t Multiply(uint32_t a, uint32_t b) {
    uint32_t m = 1u << 31;
    uint32_t product = 0;
    for (;;) {
        if (a & m) {
            product ^= b;
            if ((a & (m - 1)) == 0) return product;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
        if (m == 0) return product;
    }
}

struct Tables {
    uint32_t x2n[32];           // x^(2^k) modulo the polynomial
    uint32_t bytes[256];        // byte-wise table (no SSE4.2)
    uint32_t long_op[4][256];   // the raw register shifted over kLong zero bytes
    uint32_t short_op[4][256];  // ... over kShort zero bytes
    bool hardware = false;

    // x^(n * 2^k) modulo the polynomial.
    uint32_t PowerOfX(int64_t n, int k) const {
        uint32_t p = 1u << 31;  // x^0
        while (n != 0) {
            if (n & 1) p = Multiply(x2n[k & 31], p);
            n >>= 1;
            ++k;
        }
        return p;
    }

    Tables() {
        uint32_t p = 1u << 30;  // x^1
        x2n[0] = p;
        for (int k = 1; k < 32; ++k) x2n[k] = p = Multiply(p, p);
        for (uint32_t n = 0; n < 256; ++n) {
            uint32_t c = n;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
            bytes[n] = c;
        }
        // Shifting a raw CRC register over n zero bytes multiplies it by x^(8n): linear, so four
        // tables of a byte each give it in four look-ups.
        uint32_t over_long = PowerOfX(kLong, 3), over_short = PowerOfX(kShort, 3);
        for (uint32_t n = 0; n < 256; ++n) {
            for (int j = 0; j < 4; ++j) {
                long_op[j][n] = Multiply(over_long, n << (8 * j));
                short_op[j][n] = Multiply(over_short, n << (8 * j));
            }
        }
#if defined(__x86_64__)
        __builtin_cpu_init();
        hardware = __builtin_cpu_supports("sse4.2");
#endif
    }
};

inline const Tables& T() {
    static const Tables tables;
    return tables;
}

inline uint32_t Shift(const uint32_t op[4][256], uint32_t crc) {
    return op[0][crc & 0xff] ^ op[1][(crc >> 8) & 0xff] ^ op[2][(crc >> 16) & 0xff] ^
           op[3][crc >> 24];
}

inline uint32_t Software(uint32_t crc, const unsigned char* p, int64_t n) {
    const uint32_t* t = T().bytes;
    crc = ~crc;
    while (n-- > 0) crc = t[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
inline uint64_t Word(const unsigned char* q) {
    uint64_t w;
    std::memcpy(&w, q, 8);
    return w;
}

// While three blocks of stride bytes remain: sums them in three independent lanes (hiding the
// crc32 instruction's latency) and joins the lanes by shifting over stride bytes (op: the tables
// for that stride, Tables::long_op or short_op). Advances p and n past what it summed.
__attribute__((target("sse4.2"))) inline uint64_t ThreeLanes(uint64_t c0, const unsigned char*& p,
                                                             int64_t& n, int64_t stride,
                                                             const uint32_t op[4][256]) {
    while (n >= 3 * stride) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char* end = p + stride;
        do {
            c0 = _mm_crc32_u64(c0, Word(p));
            c1 = _mm_crc32_u64(c1, Word(p + stride));
            c2 = _mm_crc32_u64(c2, Word(p + 2 * stride));
            p += 8;
        } while (p < end);
        c0 = Shift(op, static_cast<uint32_t>(c0)) ^ c1;
        c0 = Shift(op, static_cast<uint32_t>(c0)) ^ c2;
        p += 2 * stride;
        n -= 3 * stride;
    }
    return c0;
}

__attribute__((target("sse4.2"))) inline uint32_t Hardware(uint32_t crc, const unsigned char* p,
                                                           int64_t n) {
    const Tables& t = T();
    uint64_t c0 = static_cast<uint32_t>(~crc);
    while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
        c0 = _mm_crc32_u8(static_cast<uint32_t>(c0), *p++);
        --n;
    }
    c0 = ThreeLanes(c0, p, n, kLong, t.long_op);
    c0 = ThreeLanes(c0, p, n, kShort, t.short_op);
    while (n >= 8) {
        c0 = _mm_crc32_u64(c0, Word(p));
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        c0 = _mm_crc32_u8(static_cast<uint32_t>(c0), *p++);
        --n;
    }
    return ~static_cast<uint32_t>(c0);
}
#endif

}  // namespace crc32c_detail

// The CRC32C of data [p, p + n) continued from crc, the CRC32C of what came before (0 at the
// start).
inline uint32_t Crc32cUpdate(uint32_t crc, const void* p, int64_t n) {
    const unsigned char* bytes = static_cast<const unsigned char*>(p);
#if defined(__x86_64__)
    if (crc32c_detail::T().hardware) return crc32c_detail::Hardware(crc, bytes, n);
#endif
    return crc32c_detail::Software(crc, bytes, n);
}

// The CRC32C of A || B from crc_a, crc_b and the length of B.
inline uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, int64_t length_b) {
    if (length_b <= 0) return crc_a;
    return crc32c_detail::Multiply(crc32c_detail::T().PowerOfX(length_b, 3), crc_a) ^ crc_b;
}

inline int64_t Crc32cNow() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Copies n bytes from src to dst and returns their CRC32C, taken of each block just copied while it
// is still in cache (one pass over memory instead of two). Adds the time spent summing (not
// copying) to *crc_nanos.
inline uint32_t CopyCrc32c(char* dst, const char* src, int64_t n, int64_t* crc_nanos) {
    constexpr int64_t kBlock = 3 * crc32c_detail::kLong * 4;  // 96 KiB: in L2
    uint32_t crc = 0;
    int64_t spent = 0;
    for (int64_t off = 0; off < n; off += kBlock) {
        int64_t m = n - off < kBlock ? n - off : kBlock;
        std::memcpy(dst + off, src + off, static_cast<size_t>(m));
        int64_t t0 = Crc32cNow();
        crc = Crc32cUpdate(crc, dst + off, m);
        spent += Crc32cNow() - t0;
    }
    *crc_nanos += spent;
    return crc;
}

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_CRC32C_H_
