package io.weightrelay.lab.cluster;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The Redis one {@code ./relay} run uses: the configured one ({@link #configured()}) when it
 * answers, else a redis-server of the run's own on a free loopback port ({@link LabRedis}, nothing
 * saved), said on stderr and stopped by {@link #close()} (or, when the JVM ends another way, by the
 * server's watcher). So the first command works on a fresh machine with Redis installed but not
 * running, and never touches a Redis it did not start. Thread safe.
 */
public final class RunRedis implements AutoCloseable {

    /**
     * The lab's Redis as {@code host:port}: this system property, else the environment variable
     * {@value #ENV}, else {@code 127.0.0.1:6379}. The launcher sets the property to the Redis it
     * chose, so the command it runs ({@link LabCluster.Site#local()}, {@code Args}) uses that one.
     */
    public static final String PROPERTY = "relay.lab.redis";

    /** See {@link #PROPERTY}. */
    public static final String ENV = "RELAY_LAB_REDIS";

    /** The Redis a lab uses when nothing says otherwise. */
    public static final Address DEFAULT = new Address("127.0.0.1", 6379, "the default");

    /** A Redis address and where it was configured (for messages). */
    public record Address(String host, int port, String source) {

        /** {@code host:port}. */
        public String hostPort() {
            return host + ":" + port;
        }

        /** {@code host:port} parsed, or a refusal naming {@code source}. */
        static Address parse(String hostPort, String source) {
            int colon = hostPort.lastIndexOf(':');
            try {
                if (colon <= 0) {
                    throw new NumberFormatException("no port");
                }
                int port = Integer.parseInt(hostPort.substring(colon + 1).strip());
                if (port < 1 || port > 65535) {
                    throw new NumberFormatException("out of range");
                }
                return new Address(hostPort.substring(0, colon).strip(), port, source);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        source + "=" + hostPort + " is not host:port (e.g. 127.0.0.1:6379)", e);
            }
        }
    }

    private final Address address;
    private LabRedis own;

    private RunRedis(Address address, LabRedis own) {
        this.address = address;
        this.own = own;
    }

    /** The configured Redis: {@link #PROPERTY}, else {@link #ENV}, else {@link #DEFAULT}. */
    public static Address configured() {
        String property = System.getProperty(PROPERTY);
        if (property != null && !property.isBlank()) {
            return Address.parse(property, "-D" + PROPERTY);
        }
        String env = System.getenv(ENV);
        if (env != null && !env.isBlank()) {
            return Address.parse(env, ENV);
        }
        return DEFAULT;
    }

    /**
     * {@code wanted} when a Redis answers there; else a redis-server of this run's own in a fresh
     * directory under {@code java.io.tmpdir}, announced on {@code err}. Throws {@link
     * LabRedis.ServerMissing} (naming what to install) at once when it would need one and there is
     * no redis-server.
     */
    public static RunRedis choose(Address wanted, PrintStream err) {
        if (LabRedis.answersPing(wanted.host(), wanted.port())) {
            return new RunRedis(wanted, null);
        }
        LabRedis.serverBinary(); // before anything is made: fails naming what to install
        Path dir;
        try {
            dir =
                    Files.createTempDirectory(
                            Path.of(System.getProperty("java.io.tmpdir")), "wr-redis-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make a directory for redis-server", e);
        }
        LabRedis own = LabRedis.start(dir, false);
        err.printf(
                "relay: no Redis answers at %s (%s; set %s=host:port for another): started"
                        + " redis-server on %s:%d for this run; it stops when the run ends%n",
                wanted.hostPort(), wanted.source(), ENV, own.host(), own.port());
        return new RunRedis(new Address(own.host(), own.port(), "this run's own"), own);
    }

    /** The Redis this run uses. */
    public Address address() {
        return address;
    }

    /** Whether this run started that Redis itself. */
    public synchronized boolean own() {
        return own != null;
    }

    /** Stops this run's own redis-server and deletes its directory; nothing for a shared one. */
    @Override
    public synchronized void close() {
        if (own != null) {
            own.close();
            own = null;
        }
    }
}
