// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), just enough for the tcp handshake.
// Our own, small and checked against the RFC 4231 vectors in dp_test.cc: the data plane has no
// OpenSSL dependency (machines that build it may lack libssl-dev).
#ifndef WEIGHT_RELAY_DP_CRYPTO_H_
#define WEIGHT_RELAY_DP_CRYPTO_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dp {

class Sha256 {
 public:
    static constexpr size_t kDigest = 32;
    static constexpr size_t kBlock = 64;

    Sha256() { Reset(); }

    void Reset() {
        static const uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
        std::memcpy(h_, kInit, sizeof h_);
        length_ = 0;
        used_ = 0;
    }

    void Update(const void* data, size_t n) {
        const uint8_t* p = static_cast<const uint8_t*>(data);
        length_ += n;
        while (n > 0) {
            size_t take = kBlock - used_ < n ? kBlock - used_ : n;
            std::memcpy(block_ + used_, p, take);
            used_ += take;
            p += take;
            n -= take;
            if (used_ == kBlock) {
                Compress(block_);
                used_ = 0;
            }
        }
    }

    void Final(uint8_t out[kDigest]) {
        uint64_t bits = length_ * 8;
        uint8_t pad = 0x80;
        Update(&pad, 1);
        uint8_t zero = 0;
        while (used_ != 56) Update(&zero, 1);
        uint8_t len[8];
        for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
        Update(len, 8);
        for (int i = 0; i < 8; ++i) {
            out[4 * i] = static_cast<uint8_t>(h_[i] >> 24);
            out[4 * i + 1] = static_cast<uint8_t>(h_[i] >> 16);
            out[4 * i + 2] = static_cast<uint8_t>(h_[i] >> 8);
            out[4 * i + 3] = static_cast<uint8_t>(h_[i]);
        }
    }

 private:
    static uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

    void Compress(const uint8_t* b) {
        static const uint32_t k[64] = {
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
            0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
            0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
            0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
            0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
            0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
            0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
            0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
            0xc67178f2};
        uint32_t w[64];
        for (int i = 0; i < 16; ++i)
            w[i] = (uint32_t{b[4 * i]} << 24) | (uint32_t{b[4 * i + 1]} << 16) |
                   (uint32_t{b[4 * i + 2]} << 8) | uint32_t{b[4 * i + 3]};
        for (int i = 16; i < 64; ++i) {
            uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6],
                 h = h_[7];
        for (int i = 0; i < 64; ++i) {
            uint32_t t1 =
                h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
            uint32_t t2 =
                (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = bb;
            bb = a;
            a = t1 + t2;
        }
        h_[0] += a;
        h_[1] += bb;
        h_[2] += c;
        h_[3] += d;
        h_[4] += e;
        h_[5] += f;
        h_[6] += g;
        h_[7] += h;
    }

    uint32_t h_[8];
    uint8_t block_[kBlock];
    uint64_t length_;
    size_t used_;
};

// An HMAC-SHA256 key with its padded states absorbed once: each MAC then costs the message's
// compressions plus two, not four more (the per-request MACs of a connection share one key).
class HmacKey {
 public:
    HmacKey() = default;
    HmacKey(const void* key, size_t key_len) {
        uint8_t k[Sha256::kBlock] = {0};
        if (key_len > Sha256::kBlock) {
            Sha256 s;
            s.Update(key, key_len);
            s.Final(k);
        } else if (key_len > 0) {
            std::memcpy(k, key, key_len);
        }
        uint8_t pad[Sha256::kBlock];
        for (size_t i = 0; i < Sha256::kBlock; ++i) pad[i] = k[i] ^ 0x36;
        inner_.Update(pad, sizeof pad);
        for (size_t i = 0; i < Sha256::kBlock; ++i) pad[i] = k[i] ^ 0x5c;
        outer_.Update(pad, sizeof pad);
    }
    // A fresh MAC computation under this key: Update the message parts, then Final.
    class Mac {
     public:
        explicit Mac(const HmacKey& k) : inner_(k.inner_), outer_(k.outer_) {}
        void Update(const void* data, size_t n) { inner_.Update(data, n); }
        void Final(uint8_t out[Sha256::kDigest]) {
            uint8_t inner[Sha256::kDigest];
            inner_.Final(inner);
            outer_.Update(inner, sizeof inner);
            outer_.Final(out);
        }

     private:
        Sha256 inner_;
        Sha256 outer_;
    };

 private:
    Sha256 inner_;
    Sha256 outer_;
};

// HMAC-SHA256: Begin with the key, Update with the message parts, Final. (A key that MACs many
// messages is an HmacKey, each message one HmacKey::Mac.)
class HmacSha256 {
 public:
    HmacSha256(const void* key, size_t key_len) : mac_(HmacKey(key, key_len)) {}
    void Update(const void* data, size_t n) { mac_.Update(data, n); }
    void Final(uint8_t out[Sha256::kDigest]) { mac_.Final(out); }

 private:
    HmacKey::Mac mac_;
};

// Compares n bytes in time independent of where they differ.
inline bool ConstantTimeEqual(const uint8_t* a, const uint8_t* b, size_t n) {
    uint8_t diff = 0;
    for (size_t i = 0; i < n; ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
    return diff == 0;
}

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_CRYPTO_H_
