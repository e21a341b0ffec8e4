package io.weightrelay.dataplane;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The data-plane role keys one engine holds: for each {@link DataplaneRole} at most one 32-byte
 * key, {@code K(role) = HMAC-SHA256(secret, "weight-relay dataplane v1 role key" | role byte)}.
 * Deployment tooling derives them from the deployment secret once ({@link #derive}) and gives each
 * service only the keys it needs (docs/deploy.md); an engine proves the key of the role it claims
 * and accepts connections only of the roles it holds keys of, so a loader given the peer key can
 * neither act as nor accept a remover or a storer.
 *
 * <p>A key file holds one {@code role=hex} line per key ({@link #parse}, {@link #format}); blank
 * lines and lines starting with {@code #} are ignored.
 *
 * <p>Immutable and thread safe; accessors return copies. {@link #toString()} names the roles, never
 * a key.
 */
public final class RoleKeys {
    /** Bytes of one key. */
    public static final int KEY_BYTES = 32;

    private static final String LABEL = "weight-relay dataplane v1 role key";
    private static final RoleKeys NONE = new RoleKeys(new EnumMap<>(DataplaneRole.class));

    private final EnumMap<DataplaneRole, byte[]> keys;

    private RoleKeys(EnumMap<DataplaneRole, byte[]> keys) {
        this.keys = keys;
    }

    /** No key: an engine that makes and accepts no tcp connection. */
    public static RoleKeys none() {
        return NONE;
    }

    /** The keys of {@code roles} (every role when none is named) derived from {@code secret}. */
    public static RoleKeys derive(byte[] secret, DataplaneRole... roles) {
        if (secret == null || secret.length == 0) {
            throw new IllegalArgumentException("no secret to derive role keys from");
        }
        DataplaneRole[] which = roles.length == 0 ? DataplaneRole.values() : roles;
        EnumMap<DataplaneRole, byte[]> out = new EnumMap<>(DataplaneRole.class);
        for (DataplaneRole r : which) {
            out.put(r, hmac(secret, LABEL.getBytes(StandardCharsets.US_ASCII), r.wire()));
        }
        return new RoleKeys(out);
    }

    /**
     * The keys a key file holds.
     *
     * @param source what the text came from (a property, a file), named in every refusal
     * @throws IllegalArgumentException for a malformed line, an unknown role, a key that is not 32
     *     bytes of hex, or a role given twice; the message never holds key material
     */
    public static RoleKeys parse(String text, String source) {
        EnumMap<DataplaneRole, byte[]> out = new EnumMap<>(DataplaneRole.class);
        String[] lines = text.split("\\R");
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String where = source + " line " + (i + 1);
            int eq = line.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException(
                        where
                                + " is not 'role=hex key' (a deployment secret goes to the key"
                                + " derivation, never to a service)");
            }
            DataplaneRole role;
            try {
                role = DataplaneRole.ofLabel(line.substring(0, eq));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + ": " + e.getMessage(), e);
            }
            byte[] key;
            try {
                key = HexFormat.of().parseHex(line.substring(eq + 1).trim());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        where + ": the " + role.label() + " key is not hex", e);
            }
            if (key.length != KEY_BYTES) {
                throw new IllegalArgumentException(
                        where
                                + ": the "
                                + role.label()
                                + " key holds "
                                + key.length
                                + " bytes, not "
                                + KEY_BYTES);
            }
            if (out.put(role, key) != null) {
                throw new IllegalArgumentException(where + ": a second " + role.label() + " key");
            }
        }
        return new RoleKeys(out);
    }

    /** Only the keys of {@code roles} this holds (what tooling hands one service). */
    public RoleKeys only(DataplaneRole... roles) {
        EnumMap<DataplaneRole, byte[]> out = new EnumMap<>(DataplaneRole.class);
        for (DataplaneRole r : roles) {
            byte[] k = keys.get(r);
            if (k != null) {
                out.put(r, k);
            }
        }
        return new RoleKeys(out);
    }

    /** The key file of these keys: one {@code role=hex} line each. */
    public String format() {
        StringBuilder b = new StringBuilder();
        keys.forEach(
                (r, k) ->
                        b.append(r.label())
                                .append('=')
                                .append(HexFormat.of().formatHex(k))
                                .append('\n'));
        return b.toString();
    }

    public boolean has(DataplaneRole role) {
        return keys.containsKey(role);
    }

    public boolean isEmpty() {
        return keys.isEmpty();
    }

    public Set<DataplaneRole> roles() {
        return Set.copyOf(keys.keySet());
    }

    /** A copy of the key of {@code role}, or null when not held. */
    public byte[] key(DataplaneRole role) {
        byte[] k = keys.get(role);
        return k == null ? null : k.clone();
    }

    /** The keys as dp_engine_create takes them: per key its role byte, then the key. */
    byte[] encoded() {
        byte[] out = new byte[keys.size() * (KEY_BYTES + 1)];
        int at = 0;
        for (Map.Entry<DataplaneRole, byte[]> e : keys.entrySet()) {
            out[at] = (byte) e.getKey().wire();
            System.arraycopy(e.getValue(), 0, out, at + 1, KEY_BYTES);
            at += KEY_BYTES + 1;
        }
        return out;
    }

    private static byte[] hmac(byte[] key, byte[] label, int role) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(label);
            mac.update((byte) role);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available", e);
        }
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof RoleKeys other) || !keys.keySet().equals(other.keys.keySet())) {
            return false;
        }
        for (DataplaneRole r : keys.keySet()) {
            if (!Arrays.equals(keys.get(r), other.keys.get(r))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        return keys.keySet().hashCode();
    }

    /** {@code RoleKeys[peer, remover]}: the roles, never a key. */
    @Override
    public String toString() {
        StringJoiner j = new StringJoiner(", ", "RoleKeys[", "]");
        keys.keySet().forEach(r -> j.add(r.label()));
        return j.toString();
    }
}
