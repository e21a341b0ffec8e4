package io.weightrelay.service.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Finds the caller of a presented token in time that does not depend on where or whether it
 * matches: every configured token is compared, always, over SHA-256 digests so that token lengths
 * do not leak either. Thread safe and immutable.
 */
public final class TokenAuthenticator {

    private record Entry(byte[] digest, Caller caller) {}

    private final List<Entry> entries;

    public TokenAuthenticator(Map<Role, List<String>> tokens) {
        this(tokens, List.of());
    }

    public TokenAuthenticator(Map<Role, List<String>> tokens, List<BoundToken> bound) {
        List<Entry> list = new ArrayList<>();
        tokens.forEach(
                (role, values) ->
                        values.forEach(t -> list.add(new Entry(sha256(t), Caller.unbound(role)))));
        bound.forEach(
                b -> list.add(new Entry(sha256(b.token()), new Caller(b.role(), b.identity()))));
        this.entries = List.copyOf(list);
    }

    /** The role whose token this is, or empty for an unknown token. */
    public Optional<Role> authenticate(String presented) {
        return caller(presented).map(Caller::role);
    }

    /** The caller (role and bound identity) whose token this is, or empty for an unknown token. */
    public Optional<Caller> caller(String presented) {
        byte[] digest = sha256(presented);
        Caller found = null;
        for (Entry entry : entries) {
            // No early exit: the loop costs the same whichever entry matches.
            if (MessageDigest.isEqual(entry.digest(), digest) && found == null) {
                found = entry.caller();
            }
        }
        return Optional.ofNullable(found);
    }

    private static byte[] sha256(String value) {
        try {
            return MessageDigest.getInstance("SHA-256")
                    .digest(value.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every JDK", e);
        }
    }
}
