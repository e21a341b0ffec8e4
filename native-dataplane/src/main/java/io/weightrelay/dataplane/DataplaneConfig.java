package io.weightrelay.dataplane;

import java.lang.reflect.RecordComponent;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.StringJoiner;

/**
 * How a process opens its data plane.
 *
 * @param nodeLabel the node this process runs on: engines with the same label use the local
 *     (shared-memory) transport between them, others tcp
 * @param redisUri metadata store, e.g. {@code redis://127.0.0.1:6379}
 * @param keyPrefix prefix of every Redis key (must start with {@code wr:}); tests use a unique one
 * @param tcpBindHost address the engine's tcp server binds (loopback by default)
 * @param advertiseHost address peers use to reach this engine (defaults to {@code tcpBindHost})
 * @param tcpPort port of the engine's tcp server, 0 for any free port
 * @param tcpStreams connections per peer engine (two pay off on loopback here)
 * @param localThreads copy threads of the local transport
 * @param ioTimeout socket timeout after which a silent peer counts as gone
 * @param shmDir directory of segment files ({@code /dev/shm})
 * @param connectTimeout how long connecting to a peer engine may take
 * @param maxConnections cap on the authenticated tcp connections this engine's server holds at
 *     once; every other engine of the deployment may hold its streams plus a control connection, so
 *     size it with {@link #maxConnectionsFor(int, int)}. Connections still in their handshake have
 *     a small cap of their own and an absolute deadline, and never take one of these
 * @param idleTimeout an authenticated connection without a request for this long is closed by the
 *     server (a restarted or vanished peer holds no slot and no thread for longer); this engine
 *     drops its own pooled connections after half of it and reconnects transparently
 * @param roleKeys the data-plane role keys this engine holds ({@link RoleKeys}): every tcp
 *     connection proves the key of its role (mutual challenge-response) before its first request
 *     and MACs every request with a key fresh per connection; this engine connects as the role it
 *     claims (whose key it must hold) and accepts only the roles it holds keys of. Never logged.
 *     Empty only where the engine must not authenticate (tests of the refusal path)
 * @param hostId identity of the host this process runs on (for example the machine id plus the shm
 *     directory), or {@code null} to derive it: the local transport is used only when both the node
 *     label and the host identity of a segment match
 * @param remover whether this engine's connections claim the remover role (control-api): besides
 *     reading, writing and notifying, a remover may free allocations in segments of other engines
 *     (removing objects)
 * @param storer whether this engine's connections claim the storer role (a client-only publisher,
 *     owning no store memory): besides reading, writing and notifying, a storer may ask the owner
 *     of a store segment to allocate in it (a put into that segment) and free there what its failed
 *     puts allocated. Only the owner of a segment ever allocates in it, for itself or on a storer's
 *     request. Not together with {@code remover}.
 * @param redisCaCertificate a PEM file of the certificate authorities the metadata client trusts
 *     when {@code redisUri} is {@code rediss://} (a private CA); {@code null}: the JVM's trust
 *     store
 * @param engine which engine {@link Dataplane#open} starts; null: {@link DataplaneEngine#BUILTIN}
 * @param mooncake how the {@link DataplaneEngine#MOONCAKE} engine runs its agent (required with it,
 *     ignored otherwise); the engine-specific fields above (tcp, shm, roles) are the built-in
 *     engine's, except {@code nodeLabel}, {@code redisUri}, {@code keyPrefix} and {@code shmDir}
 */
public record DataplaneConfig(
        String nodeLabel,
        String redisUri,
        String keyPrefix,
        String tcpBindHost,
        String advertiseHost,
        int tcpPort,
        int tcpStreams,
        int localThreads,
        Duration ioTimeout,
        Path shmDir,
        Duration connectTimeout,
        int maxConnections,
        Duration idleTimeout,
        RoleKeys roleKeys,
        String hostId,
        boolean remover,
        boolean storer,
        Path redisCaCertificate,
        DataplaneEngine engine,
        MooncakeConfig mooncake) {

    /** Streams per peer of the busiest readers (loaders), which the default cap assumes. */
    public static final int DEFAULT_PEER_STREAMS = 4;

    /** Engines the default cap assumes may connect to one engine. */
    public static final int DEFAULT_CLUSTER_ENGINES = 128;

    /**
     * The connection cap an engine needs when {@code clusterEngines} other engines (publishers,
     * storage units, loaders, control-api instances) may each hold {@code peerStreams} streams and
     * one control connection to it at once: {@code clusterEngines * (peerStreams + 1)}. Only
     * engines active within the idle timeout hold theirs, so this is an upper bound, not a
     * reservation.
     */
    public static int maxConnectionsFor(int clusterEngines, int peerStreams) {
        if (clusterEngines < 1 || peerStreams < 1) {
            throw new IllegalArgumentException(
                    "clusterEngines and peerStreams must be >= 1: "
                            + clusterEngines
                            + ", "
                            + peerStreams);
        }
        return Math.toIntExact((long) clusterEngines * (peerStreams + 1));
    }

    public DataplaneConfig {
        Objects.requireNonNull(nodeLabel, "nodeLabel");
        Objects.requireNonNull(redisUri, "redisUri");
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        Objects.requireNonNull(tcpBindHost, "tcpBindHost");
        Objects.requireNonNull(ioTimeout, "ioTimeout");
        Objects.requireNonNull(shmDir, "shmDir");
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        Objects.requireNonNull(idleTimeout, "idleTimeout");
        if (idleTimeout.toMillis() < 1 || idleTimeout.toMillis() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "idleTimeout must be between 1 ms and "
                            + Integer.MAX_VALUE
                            + " ms: "
                            + idleTimeout);
        }
        roleKeys = roleKeys == null ? RoleKeys.none() : roleKeys;
        engine = engine == null ? DataplaneEngine.BUILTIN : engine;
        if (engine == DataplaneEngine.MOONCAKE && mooncake == null) {
            throw new IllegalArgumentException(
                    "engine mooncake needs its agent's configuration (DataplaneConfig.mooncake)");
        }
        if (remover && storer) {
            throw new IllegalArgumentException(
                    "an engine claims one role: remover (control-api) or storer (a client-only"
                            + " publisher), not both");
        }
        DataplaneRole claimed =
                remover
                        ? DataplaneRole.REMOVER
                        : storer ? DataplaneRole.STORER : DataplaneRole.PEER;
        if (!roleKeys.isEmpty() && !roleKeys.has(claimed)) {
            throw new IllegalArgumentException(
                    "the engine claims role "
                            + claimed.label()
                            + " but holds no "
                            + claimed.label()
                            + " key ("
                            + roleKeys
                            + "): give it the "
                            + claimed.label()
                            + " key");
        }
        if (maxConnections < 1) {
            throw new IllegalArgumentException("maxConnections must be >= 1: " + maxConnections);
        }
        if (nodeLabel.isBlank()) {
            throw new IllegalArgumentException("nodeLabel must not be blank");
        }
        if (!keyPrefix.startsWith("wr:")) {
            throw new IllegalArgumentException("keyPrefix must start with 'wr:': " + keyPrefix);
        }
        if (advertiseHost == null) {
            advertiseHost = tcpBindHost;
        }
        if (tcpBindHost.isBlank()) {
            throw new IllegalArgumentException("tcpBindHost must not be blank");
        }
        if (isWildcard(advertiseHost)) {
            throw new DataplaneException(
                    DataplaneError.INVALID_ARGUMENT,
                    "advertiseHost is the wildcard '"
                            + advertiseHost
                            + "' (tcpBindHost "
                            + tcpBindHost
                            + "): peers cannot connect to it; set advertiseHost to an address or"
                            + " name of this host that peers reach");
        }
        if (hostId != null && hostId.isBlank()) {
            throw new IllegalArgumentException("hostId must not be blank (null derives it)");
        }
        if (tcpPort < 0 || tcpPort > 65535 || tcpStreams < 1 || localThreads < 1) {
            throw new IllegalArgumentException("bad port, stream or thread count");
        }
    }

    /**
     * Whether host is a literal wildcard address (0.0.0.0, ::, in any spelling); names are never
     * resolved here.
     */
    static boolean isWildcard(String host) {
        String h = host.trim();
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        if (h.isEmpty() || h.equals("*")) {
            return true;
        }
        boolean literal = h.matches("[0-9.]+") || h.contains(":");
        if (!literal) {
            return false;
        }
        try {
            return java.net.InetAddress.getByName(h).isAnyLocalAddress(); // a literal: no lookup
        } catch (java.net.UnknownHostException e) {
            return false;
        }
    }

    /** The role this engine's connections prove: remover, storer, or else peer. */
    public DataplaneRole role() {
        return remover ? DataplaneRole.REMOVER : storer ? DataplaneRole.STORER : DataplaneRole.PEER;
    }

    /** Whether this engine holds the key of its role (without it, no tcp in either direction). */
    public boolean authenticated() {
        return roleKeys.has(role());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DataplaneConfig other
                && nodeLabel.equals(other.nodeLabel)
                && redisUri.equals(other.redisUri)
                && keyPrefix.equals(other.keyPrefix)
                && tcpBindHost.equals(other.tcpBindHost)
                && Objects.equals(advertiseHost, other.advertiseHost)
                && tcpPort == other.tcpPort
                && tcpStreams == other.tcpStreams
                && localThreads == other.localThreads
                && ioTimeout.equals(other.ioTimeout)
                && shmDir.equals(other.shmDir)
                && connectTimeout.equals(other.connectTimeout)
                && maxConnections == other.maxConnections
                && idleTimeout.equals(other.idleTimeout)
                && roleKeys.equals(other.roleKeys)
                && Objects.equals(hostId, other.hostId)
                && remover == other.remover
                && storer == other.storer
                && Objects.equals(redisCaCertificate, other.redisCaCertificate)
                && engine == other.engine
                && Objects.equals(mooncake, other.mooncake);
    }

    @Override
    public int hashCode() {
        return Objects.hash(nodeLabel, redisUri, keyPrefix, tcpBindHost, advertiseHost, tcpPort);
    }

    /** Every component, in declaration order; never prints a key, nor the Redis password. */
    @Override
    public String toString() {
        return describe(this);
    }

    /**
     * How a data-plane configuration prints, this record or the properties a service binds it from:
     * every component by name, in declaration order, with the password in {@code redisUri} masked,
     * {@code roleKeys} by their roles and any secret or key file shown only as set ({@code
     * <hidden>}) or not ({@code none}).
     */
    public static String describe(Record config) {
        StringJoiner fields = new StringJoiner(", ", config.getClass().getSimpleName() + "[", "]");
        for (RecordComponent c : config.getClass().getRecordComponents()) {
            Object value = componentValue(config, c);
            Object shown =
                    switch (c.getName()) {
                        case "secret", "roleKeysText" -> unset(value) ? "none" : "<hidden>";
                        case "redisUri" -> RedisUris.mask((String) value);
                        default -> value;
                    };
            fields.add(c.getName() + "=" + shown);
        }
        return fields.toString();
    }

    private static boolean unset(Object secret) {
        return secret == null
                || secret instanceof byte[] bytes && bytes.length == 0
                || secret instanceof String text && text.isEmpty();
    }

    private static Object componentValue(Record config, RecordComponent c) {
        try {
            return c.getAccessor().invoke(config);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read " + c.getName(), e);
        }
    }

    /** A builder with the defaults: local Redis, {@code wr:dp:}, loopback, two streams. */
    public static Builder builder(String nodeLabel) {
        return new Builder(nodeLabel);
    }

    /** Builder of {@link DataplaneConfig}. Not thread safe. */
    public static final class Builder {
        private final String nodeLabel;
        private String redisUri = "redis://127.0.0.1:6379";
        private String keyPrefix = "wr:dp:";
        private String tcpBindHost = "127.0.0.1";
        private String advertiseHost;
        private int tcpPort;
        private int tcpStreams = 2;
        private int localThreads = 2;
        private Duration ioTimeout = Duration.ofSeconds(30);
        private Path shmDir = Path.of("/dev/shm");
        private Duration connectTimeout = Duration.ofSeconds(5);
        private int maxConnections =
                maxConnectionsFor(DEFAULT_CLUSTER_ENGINES, DEFAULT_PEER_STREAMS);
        private Duration idleTimeout = Duration.ofSeconds(60);
        private RoleKeys roleKeys = RoleKeys.none();
        private String hostId;
        private boolean remover;
        private boolean storer;
        private Path redisCaCertificate;
        private DataplaneEngine engine = DataplaneEngine.BUILTIN;
        private MooncakeConfig mooncake;

        private Builder(String nodeLabel) {
            this.nodeLabel = nodeLabel;
        }

        public Builder redisUri(String value) {
            this.redisUri = value;
            return this;
        }

        public Builder keyPrefix(String value) {
            this.keyPrefix = value;
            return this;
        }

        public Builder tcpBindHost(String value) {
            this.tcpBindHost = value;
            return this;
        }

        public Builder advertiseHost(String value) {
            this.advertiseHost = value;
            return this;
        }

        public Builder tcpPort(int value) {
            this.tcpPort = value;
            return this;
        }

        public Builder tcpStreams(int value) {
            this.tcpStreams = value;
            return this;
        }

        public Builder localThreads(int value) {
            this.localThreads = value;
            return this;
        }

        public Builder ioTimeout(Duration value) {
            this.ioTimeout = value;
            return this;
        }

        public Builder shmDir(Path value) {
            this.shmDir = value;
            return this;
        }

        public Builder connectTimeout(Duration value) {
            this.connectTimeout = value;
            return this;
        }

        public Builder maxConnections(int value) {
            this.maxConnections = value;
            return this;
        }

        public Builder idleTimeout(Duration value) {
            this.idleTimeout = value;
            return this;
        }

        /** The role keys this engine holds (a service: only those its duties need). */
        public Builder roleKeys(RoleKeys value) {
            this.roleKeys = value == null ? RoleKeys.none() : value;
            return this;
        }

        /**
         * Every role key, derived from a deployment secret: for tests and single-process tools that
         * play every role. A service takes {@link #roleKeys} with only its own.
         */
        public Builder secret(byte[] value) {
            this.roleKeys =
                    value == null || value.length == 0 ? RoleKeys.none() : RoleKeys.derive(value);
            return this;
        }

        public Builder hostId(String value) {
            this.hostId = value;
            return this;
        }

        /** Claim the remover role (control-api): may free in segments of other engines. */
        public Builder remover(boolean value) {
            this.remover = value;
            return this;
        }

        /**
         * Claim the storer role (a client-only publisher): may have owners allocate in their store
         * segments for its puts.
         */
        public Builder storer(boolean value) {
            this.storer = value;
            return this;
        }

        /** Certificate authorities (PEM) trusted for a {@code rediss://} metadata store. */
        public Builder redisCaCertificate(Path value) {
            this.redisCaCertificate = value;
            return this;
        }

        /** Which engine {@link Dataplane#open} starts (default {@link DataplaneEngine#BUILTIN}). */
        public Builder engine(DataplaneEngine value) {
            this.engine = value;
            return this;
        }

        /**
         * How the Mooncake engine runs its agent; required with {@link DataplaneEngine#MOONCAKE}.
         */
        public Builder mooncake(MooncakeConfig value) {
            this.mooncake = value;
            return this;
        }

        public DataplaneConfig build() {
            return new DataplaneConfig(
                    nodeLabel,
                    redisUri,
                    keyPrefix,
                    tcpBindHost,
                    advertiseHost,
                    tcpPort,
                    tcpStreams,
                    localThreads,
                    ioTimeout,
                    shmDir,
                    connectTimeout,
                    maxConnections,
                    idleTimeout,
                    roleKeys,
                    hostId,
                    remover,
                    storer,
                    redisCaCertificate,
                    engine,
                    mooncake);
        }
    }
}
