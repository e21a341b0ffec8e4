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

Err SendRequest(int fd, Op op, const std::string& name, int64_t offset, int64_t length,
                uint64_t incarnation, const char* payload) {
    ReqHeader h{kMagic,     static_cast<uint32_t>(op),          offset,
                length,     static_cast<uint32_t>(name.size()), 0,
                incarnation};
    struct iovec iov[3] = {{&h, sizeof h},
                           {const_cast<char*>(name.data()), name.size()},
                           {const_cast<char*>(payload), payload ? static_cast<size_t>(length) : 0}};
    return SendAllV(fd, iov, payload ? 3 : 2);
}

void AppendRequest(std::vector<char>* out, Op op, const std::string& name, int64_t offset,
                   int64_t length, uint64_t incarnation) {
    ReqHeader h{kMagic,     static_cast<uint32_t>(op),          offset,
                length,     static_cast<uint32_t>(name.size()), 0,
                incarnation};
    const char* p = reinterpret_cast<const char*>(&h);
    out->insert(out->end(), p, p + sizeof h);
    out->insert(out->end(), name.begin(), name.end());
}

}  // namespace dp
