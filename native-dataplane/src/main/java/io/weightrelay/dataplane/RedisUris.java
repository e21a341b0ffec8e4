package io.weightrelay.dataplane;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Redis URIs as the data plane's metadata client takes them: {@code redis://host:port}, {@code
 * redis://user:password@host:port} (an ACL user), {@code redis://password@host:port} (the default
 * user's {@code requirepass}), and {@code rediss://...} for TLS. The password never goes into a
 * log: everything that prints a URI prints {@link #mask(String)}.
 */
public final class RedisUris {

    private static final Pattern USERINFO =
            Pattern.compile("^(?<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?<info>[^@/?#]*)@");

    private RedisUris() {}

    /** {@code uri} with its password (or a password-only user info) replaced by {@code ****}. */
    public static String mask(String uri) {
        if (uri == null) {
            return null;
        }
        Matcher m = USERINFO.matcher(uri);
        if (!m.find()) {
            return uri;
        }
        String info = m.group("info");
        int colon = info.indexOf(':');
        String masked = colon >= 0 ? info.substring(0, colon) + ":****" : "****";
        return m.group("scheme") + masked + "@" + uri.substring(m.end());
    }

    /** Whether {@code uri} names a user or password of its own. */
    public static boolean hasCredentials(String uri) {
        return uri != null && USERINFO.matcher(uri).find();
    }

    /**
     * {@code uri} with {@code username} / {@code password} (percent-encoded) when it has no
     * credentials of its own and a password is given, and with {@code rediss} when {@code ssl}.
     */
    public static String withCredentials(
            String uri, String username, String password, boolean ssl) {
        String out = uri;
        if (ssl && out.startsWith("redis://")) {
            out = "rediss://" + out.substring("redis://".length());
        }
        if (password == null || password.isEmpty() || hasCredentials(out)) {
            return out;
        }
        int start = out.indexOf("://") + 3;
        String info =
                (username == null || username.isEmpty() ? "" : encode(username) + ":")
                        + encode(password);
        return out.substring(0, start) + info + "@" + out.substring(start);
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
