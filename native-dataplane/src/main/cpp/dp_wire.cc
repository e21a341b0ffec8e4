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

Err SendRequest(int fd, Op op, const std::string& name, int64_t offset, int64_t length) {
    char buf[sizeof(ReqHeader) + kMaxName];
    ReqHeader h{kMagic, static_cast<uint32_t>(op),          offset,
                length, static_cast<uint32_t>(name.size()), 0};
    std::memcpy(buf, &h, sizeof h);
    std::memcpy(buf + sizeof h, name.data(), name.size());
    return SendAll(fd, buf, static_cast<int64_t>(sizeof h + name.size()));
}

}  // namespace dp
