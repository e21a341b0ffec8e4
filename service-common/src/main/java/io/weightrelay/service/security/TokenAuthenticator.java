package io.weightrelay.service.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Finds the role of a presented token in time that does not depend on where or whether it matches:
 * every configured token is compared, always, over SHA-256 digests so that token lengths do not
 * leak either. Thread safe and immutable.
 */
public final class TokenAuthenticator {

    private record Entry(byte[] digest, Role role) {}

    private final List<Entry> entries;

    public TokenAuthenticator(Map<Role, List<String>> tokens) {
        List<Entry> list = new ArrayList<>();
        tokens.forEach((role, values) -> values.forEach(t -> list.add(new Entry(sha256(t), role))));
        this.entries = List.copyOf(list);
    }

    /** The role whose token this is, or empty for an unknown token. */
    public Optional<Role> authenticate(String presented) {
        byte[] digest = sha256(presented);
        Role found = null;
        for (Entry entry : entries) {
            // No early exit: the loop costs the same whichever entry matches.
            if (MessageDigest.isEqual(entry.digest(), digest) && found == null) {
                found = entry.role();
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
