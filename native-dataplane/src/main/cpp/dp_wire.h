// The bytes on the wire of the tcp transport: the request and response headers, the handshake
// that opens every connection, and the keys and MACs it proves. README.md, "Wire format", is the
// description for humans; this file is the one for the compiler.
#ifndef WEIGHT_RELAY_DP_WIRE_H_
#define WEIGHT_RELAY_DP_WIRE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dp_crypto.h"
#include "dp_internal.h"

namespace dp {

// Wire protocol of the tcp transport: requests and their responses in order per connection. A
// client may send further requests before the earlier responses arrived (pipelining); the server
// answers them one after the other, so the n-th response belongs to the n-th request.
constexpr uint32_t kMagic = 0x57524450;  // "WRDP"
constexpr uint32_t kMaxName = 4096;
// The chunk a client cuts tcp transfers into: small enough that a large transfer pipelines in a
// kPipelineBytes window and spreads finely over the streams, large enough that a chunk's
// bookkeeping is noise (1 MiB read as fast as 8 MiB on loopback here).
constexpr int64_t kTcpChunk = 1 << 20;
// The longest payload one READ or WRITE request may carry (clients before pipelining sent 8 MiB
// chunks). A longer request is malformed and its connection closed (never read into, never
// discarded for ages).
constexpr int64_t kMaxRequest = 8 << 20;

enum class Op : uint32_t { kWrite = 1, kRead = 2, kNotify = 3, kAlloc = 4, kFree = 5 };

struct ReqHeader {
    uint32_t magic;
    uint32_t op;
    int64_t offset;
    int64_t length;
    uint32_t name_len;
    uint32_t reserved;
    // READ, WRITE, ALLOC, FREE: the incarnation of the named segment the request is meant for
    // (from its descriptor); the owner refuses any other with DP_ERR_STALE_SEGMENT. NOTIFY: 0.
    uint64_t incarnation;
};

struct RespHeader {
    int32_t status;
    int32_t reserved;
    int64_t value;
};

// What a server's reply status means to its client: DP_OK, or one of the refusals a server sends.
// Anything else (DP_PENDING or any other positive value, a code this build does not know, one no
// server sends) is a peer out of protocol, never a success: kProtocol, and the connection is
// dropped (its stream can no longer be trusted to be in step).
inline Err FromReply(int32_t status) {
    switch (status) {
        case DP_OK:
            return Err::kOk;
        case DP_ERR_INVALID_ARGUMENT:
        case DP_ERR_UNKNOWN_SEGMENT:
        case DP_ERR_OUT_OF_BOUNDS:
        case DP_ERR_SEGMENT_FULL:
        case DP_ERR_NOT_FOUND:
        case DP_ERR_INTERNAL:
        case DP_ERR_DENIED:
        case DP_ERR_READ_ONLY:
        case DP_ERR_STALE_SEGMENT:
            return static_cast<Err>(status);
        default:
            return Err::kProtocol;
    }
}

// The handshake that opens every connection (little-endian, as the request header).
constexpr uint32_t kHelloMagic = 0x48445257;      // "WRDH"
constexpr uint32_t kChallengeMagic = 0x43445257;  // "WRDC"
constexpr uint32_t kAckMagic = 0x41445257;        // "WRDA"
// 2: every request carries a MAC under the connection's key (RequestMac); a version 1 client is
// refused at its hello.
constexpr uint8_t kHandshakeVersion = 2;
constexpr size_t kNonce = 32;
constexpr size_t kMac = Sha256::kDigest;
enum : uint8_t { kChallengeOk = 0, kChallengeBusy = 1, kChallengeRefused = 2 };

struct Hello {  // client -> server
    uint32_t magic;
    uint8_t version;
    uint8_t role;  // DP_ROLE_*
    uint16_t reserved;
    uint8_t nonce[kNonce];
};

struct Challenge {  // server -> client
    uint32_t magic;
    uint8_t version;
    uint8_t status;  // kChallenge*
    uint16_t reserved;
    uint8_t nonce[kNonce];
    uint8_t mac[kMac];  // HMAC(role key, "WRDP1 server" | hello | challenge up to mac)
};

struct Proof {          // client -> server
    uint8_t mac[kMac];  // HMAC(role key, "WRDP1 client" | hello | challenge)
};

// Ack status of a client that proved its key while the server's authenticated connections were at
// their cap: like a busy challenge, try again shortly.
constexpr int32_t kAckBusy = 1;

struct Ack {  // server -> client
    uint32_t magic;
    int32_t status;  // DP_OK; kAckBusy or DP_ERR_DENIED before the server closes
};

static_assert(sizeof(ReqHeader) == 40 && sizeof(RespHeader) == 16, "wire header sizes");
static_assert(sizeof(Hello) == 40 && sizeof(Challenge) == 72 && sizeof(Proof) == 32 &&
                  sizeof(Ack) == 8,
              "handshake sizes");

using Key = std::array<uint8_t, kMac>;

// The bytes of a request MAC on the wire: HMAC-SHA256 truncated to 128 bits.
constexpr size_t kRequestMac = 16;

// The key a role's connections prove: HMAC(secret, label | role). Binding the role into the key
// and the transcript means a transcript of one role never passes as another. Engines are given
// role keys, never the secret: this is the derivation deployment tooling runs (README.md, "Wire
// format"), kept here for the C tests.
Key RoleKey(const std::vector<uint8_t>& secret, uint8_t role);

// Authenticates the requests of one connection after its handshake: the key is
// HMAC(role key, "WRDP2 request" | hello | challenge), fresh with both nonces, and each request
// carries HMAC(key, sequence | header | name) truncated to kRequestMac bytes, the sequence counting
// the connection's requests from 0. A request altered, injected, dropped, replayed or reordered on
// the path fails its MAC. Not thread safe: one per connection, used by the one thread that sends
// (client) or serves (server) its requests.
class RequestMac {
 public:
    RequestMac() = default;
    RequestMac(const Key& role_key, const Hello& hello, const Challenge& c);
    // The MAC of the next request (and counts it).
    void Next(const ReqHeader& h, const char* name, size_t name_len, uint8_t* out);
    // Whether mac is the next request's (counts it either way: a connection that fails is closed).
    bool Verify(const ReqHeader& h, const char* name, size_t name_len, const uint8_t* mac);
    uint64_t sequence() const { return sequence_; }

 private:
    HmacKey key_;
    uint64_t sequence_ = 0;
};
// The server's MAC over hello and the challenge up to its mac field.
void ServerMac(const Key& key, const Hello& hello, const Challenge& c, uint8_t* out);
// The client's MAC over hello and the whole challenge.
void ClientMac(const Key& key, const Hello& hello, const Challenge& c, uint8_t* out);
// n bytes from the kernel's random source; false if it fails.
bool FillRandom(uint8_t* p, size_t n);
// Sends one request: header (naming the segment's incarnation), name, its MAC and, for a WRITE,
// the payload's length bytes at payload, in one sendmsg when the socket takes them.
Err SendRequest(int fd, RequestMac* mac, Op op, const std::string& name, int64_t offset,
                int64_t length, uint64_t incarnation, const char* payload = nullptr);
// Appends one request's header, name and MAC to out (for sending several requests at once).
void AppendRequest(std::vector<char>* out, RequestMac* mac, Op op, const std::string& name,
                   int64_t offset, int64_t length, uint64_t incarnation);

}  // namespace dp

#endif  // WEIGHT_RELAY_DP_WIRE_H_
