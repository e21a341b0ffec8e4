package io.weightrelay.service.dataplane;

import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * What a configured host string is, decided without a DNS lookup: literals are parsed, {@code
 * localhost} counts as loopback, and any other name as routable (peers resolve it, not we).
 */
public final class Hosts {

    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    private Hosts() {}

    /** The host without IPv6 brackets. */
    static String bare(String host) {
        String h = host.trim();
        return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
    }

    static boolean isWildcard(String host) {
        InetAddress literal = literal(host);
        return literal != null ? literal.isAnyLocalAddress() : bare(host).equals("*");
    }

    public static boolean isLoopback(String host) {
        InetAddress literal = literal(host);
        if (literal != null) {
            return literal.isLoopbackAddress();
        }
        String name = bare(host).toLowerCase(Locale.ROOT);
        return name.equals("localhost")
                || name.endsWith(".localhost")
                || name.equals("localhost.localdomain");
    }

    /** Loopback or wildcard: an address no other host can reach this process at. */
    static boolean isLocalOnly(String host) {
        return isWildcard(host) || isLoopback(host);
    }

    /** {@code host} as it goes into a URL authority: IPv6 literals in brackets. */
    static String forUrl(String host) {
        String h = bare(host);
        return h.indexOf(':') >= 0 ? "[" + h + "]" : h;
    }

    /** The host of a URL, or null when it has none (a unix socket, a malformed URL). */
    static String hostOf(String url) {
        try {
            return URI.create(url.trim()).getHost();
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** Whether {@code host} is an IPv4 or IPv6 literal (never looked up). */
    static boolean isIpLiteral(String host) {
        return literal(host) != null;
    }

    private static InetAddress literal(String host) {
        String h = bare(host);
        if (!IPV4.matcher(h).matches() && h.indexOf(':') < 0) {
            return null;
        }
        try {
            // a literal: parsed, never looked up
            return InetAddress.getByName(h);
        } catch (UnknownHostException e) {
            return null;
        }
    }
}
