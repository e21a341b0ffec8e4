// The handshake's keys and MACs, and request framing (see dp_wire.h).
#include "dp_wire.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace dp {

Key RoleKey(const std::vector<uint8_t>& secret, uint8_t role) {
    static const char kLabel[] = "weight-relay dataplane v1 role key";
    HmacSha256 h(secret.data(), secret.size());
    h.Update(kLabel, sizeof kLabel - 1);
    h.Update(&role, 1);
    Key k{};
    h.Final(k.data());
    return k;
}

void ServerMac(const Key& key, const Hello& hello, const Challenge& c, uint8_t* out) {
    static const char kLabel[] = "WRDP1 server";
    HmacSha256 h(key.data(), key.size());
    h.Update(kLabel, sizeof kLabel - 1);
    h.Update(&hello, sizeof hello);
    h.Update(&c, offsetof(Challenge, mac));
    h.Final(out);
}

void ClientMac(const Key& key, const Hello& hello, const Challenge& c, uint8_t* out) {
    static const char kLabel[] = "WRDP1 client";
    HmacSha256 h(key.data(), key.size());
    h.Update(kLabel, sizeof kLabel - 1);
    h.Update(&hello, sizeof hello);
    h.Update(&c, sizeof c);
    h.Final(out);
}

RequestMac::RequestMac(const Key& role_key, const Hello& hello, const Challenge& c) {
    static const char kLabel[] = "WRDP2 request";
    HmacSha256 h(role_key.data(), role_key.size());
    h.Update(kLabel, sizeof kLabel - 1);
    h.Update(&hello, sizeof hello);
    h.Update(&c, sizeof c);
    uint8_t k[kMac];
    h.Final(k);
    key_ = HmacKey(k, sizeof k);
}

void RequestMac::Next(const ReqHeader& h, const char* name, size_t name_len, uint8_t* out) {
    uint8_t seq[8];
    for (int i = 0; i < 8; ++i) seq[i] = static_cast<uint8_t>(sequence_ >> (8 * i));
    ++sequence_;
    HmacKey::Mac m(key_);
    m.Update(seq, sizeof seq);
    m.Update(&h, sizeof h);
    m.Update(name, name_len);
    uint8_t full[kMac];
    m.Final(full);
    std::memcpy(out, full, kRequestMac);
}

bool RequestMac::Verify(const ReqHeader& h, const char* name, size_t name_len, const uint8_t* mac) {
    uint8_t expected[kRequestMac];
    Next(h, name, name_len, expected);
    return ConstantTimeEqual(expected, mac, kRequestMac);
}

bool FillRandom(uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t k = ::getrandom(p, n, 0);
        if (k < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += k;
        n -= static_cast<size_t>(k);
    }
    return true;
}

Err SendRequest(int fd, RequestMac* mac, Op op, const std::string& name, int64_t offset,
                int64_t length, uint64_t incarnation, const char* payload) {
    ReqHeader h{kMagic,     static_cast<uint32_t>(op),          offset,
                length,     static_cast<uint32_t>(name.size()), 0,
                incarnation};
    uint8_t tag[kRequestMac];
    mac->Next(h, name.data(), name.size(), tag);
    struct iovec iov[4] = {{&h, sizeof h},
                           {const_cast<char*>(name.data()), name.size()},
                           {tag, sizeof tag},
                           {const_cast<char*>(payload), payload ? static_cast<size_t>(length) : 0}};
    return SendAllV(fd, iov, payload ? 4 : 3);
}

void AppendRequest(std::vector<char>* out, RequestMac* mac, Op op, const std::string& name,
                   int64_t offset, int64_t length, uint64_t incarnation) {
    ReqHeader h{kMagic,     static_cast<uint32_t>(op),          offset,
                length,     static_cast<uint32_t>(name.size()), 0,
                incarnation};
    uint8_t tag[kRequestMac];
    mac->Next(h, name.data(), name.size(), tag);
    const char* p = reinterpret_cast<const char*>(&h);
    out->insert(out->end(), p, p + sizeof h);
    out->insert(out->end(), name.begin(), name.end());
    out->insert(out->end(), tag, tag + sizeof tag);
}

}  // namespace dp
