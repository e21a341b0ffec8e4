package io.weightrelay.service.dataplane;

import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.dataplane.DataplaneRole;
import io.weightrelay.dataplane.MooncakeConfig;
import io.weightrelay.dataplane.RoleKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.env.Environment;

/**
 * {@link DataplaneProperties}, checked and resolved once at start-up: the one factory of every
 * service's {@link DataplaneConfig} and of the URLs a service advertises. Refuses (with a {@link
 * DataplaneSettingsException} naming the property) what cannot work:
 *
 * <ul>
 *   <li>an unknown {@code engine}; with {@code mooncake}, a {@code mooncake.master} that is not
 *       {@code host:port}, a {@code mooncake.hostname} that is not an IP literal, a {@code
 *       mooncake.python} that is not an executable file;
 *   <li>a wildcard bind host without an advertise host, and a wildcard advertise host;
 *   <li>with peers on other hosts ({@link #multiHost()}): advertising a loopback address, and
 *       running without a secret;
 *   <li>both {@code secret} and {@code secret-file}, an unreadable or empty secret file, a secret
 *       shorter than {@value #MIN_SECRET_BYTES} bytes, a malformed key file, and a key file without
 *       the key of the role this service's engine proves.
 * </ul>
 *
 * <p>{@code secret-file} (or {@code secret}) holds either this service's <b>role keys</b> (a key
 * file, {@code role=hex} lines, {@link RoleKeys}: the recommended form, what deployment tooling
 * derives for each service) or the deployment secret (one-secret mode: this process could derive
 * every role's key, so it is no boundary; a warning says so). Either way each engine gets only the
 * keys of its duty: a loader the peer key, control-api the remover key, a client-only publisher the
 * storer key, a store owner the peer key and the remover and storer keys it checks (docs/deploy.md,
 * "Secrets and tokens").
 *
 * <p>Immutable and thread safe. No secret or key is ever logged or printed.
 */
public final class DataplaneSettings {

    /** The shortest secret accepted. */
    public static final int MIN_SECRET_BYTES = 16;

    private static final Logger log = LoggerFactory.getLogger(DataplaneSettings.class);
    private static final String P = "relay.dataplane.";

    private final DataplaneProperties properties;
    private final DataplaneEngine engine;
    private final String advertiseHost;
    private final boolean multiHost;
    private final String multiHostReason;
    private final RoleKeys keys;

    public DataplaneSettings(DataplaneProperties properties) {
        this.properties = properties;
        this.engine = engine(properties.engine());
        if (engine == DataplaneEngine.MOONCAKE) {
            checkMooncake(properties.mooncake());
        }
        String bind = properties.bindHost().trim();
        String advertise = blank(properties.advertiseHost()) ? null : properties.advertiseHost();
        if (advertise == null && Hosts.isWildcard(bind)) {
            throw new DataplaneSettingsException(
                    P
                            + "bind-host="
                            + bind
                            + " binds every interface, so peers cannot be told where to connect:"
                            + " set "
                            + P
                            + "advertise-host to the address or host name other processes reach"
                            + " this one at");
        }
        if (advertise != null && Hosts.isWildcard(advertise)) {
            throw new DataplaneSettingsException(
                    P
                            + "advertise-host="
                            + advertise
                            + " is a wildcard address no peer can connect to: set it to this"
                            + " host's address or name");
        }
        this.advertiseHost = Hosts.bare(advertise != null ? advertise.trim() : bind);
        if (properties.multiHost() != null) {
            this.multiHost = properties.multiHost();
            this.multiHostReason = P + "multi-host=" + properties.multiHost();
        } else {
            String redisHost = Hosts.hostOf(properties.redisUri());
            this.multiHost = redisHost != null && !Hosts.isLoopback(redisHost);
            this.multiHostReason =
                    "the store's Redis ("
                            + P
                            + "redis-uri) is on "
                            + (redisHost == null ? "this host" : redisHost)
                            + "; "
                            + P
                            + "multi-host overrides";
        }
        if (multiHost && Hosts.isLoopback(advertiseHost)) {
            throw new DataplaneSettingsException(
                    (advertise != null ? P + "advertise-host=" : P + "bind-host=")
                            + advertiseHost
                            + " is a loopback address, but peers run on other hosts ("
                            + multiHostReason
                            + "): set "
                            + P
                            + "advertise-host to an address or host name they reach this process"
                            + " at");
        }
        this.keys = resolveKeys(properties);
        if (multiHost && keys.isEmpty()) {
            throw new DataplaneSettingsException(
                    "peers run on other hosts ("
                            + multiHostReason
                            + "), so the data plane must authenticate them: set "
                            + P
                            + "secret-file (or "
                            + P
                            + "secret, environment RELAY_DATAPLANE_SECRET) to this service's role"
                            + " keys");
        }
        if (keys.isEmpty()) {
            log.warn(
                    "data plane without a secret: its engine accepts and makes no tcp connection,"
                            + " only same-node shared memory works; set {}secret-file (or {}secret)"
                            + " to the deployment's secret",
                    P,
                    P);
        }
    }

    /**
     * The role keys the configured secret file (or secret) holds: a key file's keys as given, or
     * every key derived from a deployment secret (with a warning: one-secret mode is no boundary).
     */
    private static RoleKeys resolveKeys(DataplaneProperties properties) {
        byte[] secret = resolveSecret(properties);
        if (secret.length == 0) {
            return RoleKeys.none();
        }
        String source =
                properties.secretFile() != null
                        ? P + "secret-file=" + properties.secretFile()
                        : P + "secret";
        String text = new String(secret, StandardCharsets.UTF_8);
        if (text.contains("=")) {
            try {
                return RoleKeys.parse(text, source);
            } catch (IllegalArgumentException e) {
                throw new DataplaneSettingsException(e.getMessage(), e);
            } finally {
                Arrays.fill(secret, (byte) 0);
            }
        }
        log.warn(
                "{} holds the deployment secret, from which this process could derive every"
                        + " data-plane role's key: give it a key file with only its own role keys"
                        + " (docs/deploy.md, \"Secrets and tokens\"); its engine uses only the keys"
                        + " of its duty",
                source);
        try {
            return RoleKeys.derive(secret);
        } finally {
            Arrays.fill(secret, (byte) 0);
        }
    }

    private static byte[] resolveSecret(DataplaneProperties properties) {
        boolean inline = !blank(properties.secret());
        if (inline && properties.secretFile() != null) {
            throw new DataplaneSettingsException(
                    "set " + P + "secret or " + P + "secret-file, not both");
        }
        byte[] secret;
        String source;
        if (properties.secretFile() != null) {
            source = P + "secret-file=" + properties.secretFile();
            try {
                secret = trimTrailingWhitespace(Files.readAllBytes(properties.secretFile()));
            } catch (IOException e) {
                throw new DataplaneSettingsException(
                        "cannot read " + source + ": " + e.getClass().getSimpleName(), e);
            }
        } else if (inline) {
            source = P + "secret";
            secret = properties.secret().getBytes(StandardCharsets.UTF_8);
        } else {
            return new byte[0];
        }
        if (secret.length < MIN_SECRET_BYTES
                && !new String(secret, StandardCharsets.UTF_8).contains("=")) {
            throw new DataplaneSettingsException(
                    source
                            + " holds "
                            + secret.length
                            + " bytes; the data-plane secret needs at least "
                            + MIN_SECRET_BYTES
                            + " (e.g. openssl rand -hex 32)");
        }
        return secret;
    }

    private static byte[] trimTrailingWhitespace(byte[] bytes) {
        int end = bytes.length;
        while (end > 0 && Character.isWhitespace(bytes[end - 1])) {
            end--;
        }
        return Arrays.copyOf(bytes, end);
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }

    /** The settings as bound. */
    private static DataplaneEngine engine(String value) {
        DataplaneEngine engine;
        try {
            engine = DataplaneEngine.fromLabel(value);
        } catch (IllegalArgumentException e) {
            throw new DataplaneSettingsException(P + "engine=" + value + ": " + e.getMessage());
        }
        return engine;
    }

    /** What the Mooncake agent cannot start without, named by property (docs/dataplane.md). */
    private static void checkMooncake(MooncakeProperties mc) {
        String m = P + "mooncake.";
        if (blank(mc.master())) {
            throw new DataplaneSettingsException(
                    m
                            + "master is required with "
                            + P
                            + "engine=mooncake: the host:port of mooncake_master's rpc port");
        }
        String master = mc.master().trim();
        int colon = master.lastIndexOf(':');
        if (colon <= 0
                || !master.substring(colon + 1).matches("[0-9]{1,5}")
                || Integer.parseInt(master.substring(colon + 1)) > 65535
                || Integer.parseInt(master.substring(colon + 1)) == 0) {
            throw new DataplaneSettingsException(
                    m + "master=" + master + " is not host:port (the master's rpc port)");
        }
        if (!Hosts.isIpLiteral(mc.hostname().trim())) {
            throw new DataplaneSettingsException(
                    m
                            + "hostname="
                            + mc.hostname()
                            + " is not an IP literal: Mooncake binds and advertises this address"
                            + " (127.0.0.1 on one machine, this host's own address on a cluster)");
        }
        if (!Files.isRegularFile(mc.python()) || !Files.isExecutable(mc.python())) {
            throw new DataplaneSettingsException(
                    m
                            + "python="
                            + mc.python()
                            + " is not an executable file: name the interpreter of the venv that"
                            + " holds the pinned Mooncake wheel");
        }
    }

    /**
     * The data-plane engine every config of this service names ({@code relay.dataplane.engine}).
     */
    public DataplaneEngine engine() {
        return engine;
    }

    public DataplaneProperties properties() {
        return properties;
    }

    /** The configured node label, or null when the service decides it. */
    public String nodeLabel() {
        return blank(properties.nodeLabel()) ? null : properties.nodeLabel().trim();
    }

    /** The address peers reach this process at (no IPv6 brackets). */
    public String advertiseHost() {
        return advertiseHost;
    }

    /** Whether peers run on other hosts (configured, or inferred from the store's Redis). */
    public boolean multiHost() {
        return multiHost;
    }

    /** Whether keys are configured (without them the engine makes and accepts no tcp). */
    public boolean authenticated() {
        return !keys.isEmpty();
    }

    /**
     * The engine configuration of a loader on node {@code nodeLabel}: role peer, holding only the
     * peer key (it reads the store and writes into its peers' receive segments, which accept
     * peers).
     *
     * @throws DataplaneSettingsException when {@code relay.dataplane.node-label} is set to another
     *     node, or the configured keys lack the peer key
     */
    public DataplaneConfig config(String nodeLabel) {
        return build(nodeLabel, false, false, DataplaneRole.PEER);
    }

    /**
     * The engine configuration of the owner of a store segment (a publisher or storage unit): role
     * peer, and the remover and storer keys too, which its server needs to check control-api's
     * frees and client-only publishers' puts. Keys the configuration lacks are left out (that role
     * is then refused by this owner). On the Mooncake engine its agent mounts {@code segmentBytes}
     * of store capacity (the built-in engine creates the segment itself).
     */
    public DataplaneConfig storeOwnerConfig(String nodeLabel, long segmentBytes) {
        if (engine == DataplaneEngine.MOONCAKE && segmentBytes <= 0) {
            throw new DataplaneSettingsException(
                    "a segment owner on "
                            + P
                            + "engine=mooncake mounts its segment's "
                            + segmentBytes
                            + " bytes in its Mooncake agent, which must be more than 0");
        }
        return build(
                nodeLabel,
                false,
                false,
                segmentBytes,
                DataplaneRole.PEER,
                DataplaneRole.REMOVER,
                DataplaneRole.STORER);
    }

    /**
     * As {@link #config(String)}, claiming the remover role with only its key: control-api's store
     * client, which frees the space of removed objects in the owners' segments.
     */
    public DataplaneConfig removerConfig(String nodeLabel) {
        return build(nodeLabel, true, false, DataplaneRole.REMOVER);
    }

    /**
     * As {@link #config(String)}, claiming the storer role with only its key: a client-only
     * publisher's data plane, whose puts the owners of store segments (the storage units) allocate
     * for.
     */
    public DataplaneConfig storerConfig(String nodeLabel) {
        return build(nodeLabel, false, true, DataplaneRole.STORER);
    }

    private DataplaneConfig build(
            String nodeLabel, boolean remover, boolean storer, DataplaneRole... duty) {
        return build(nodeLabel, remover, storer, 0, duty);
    }

    private DataplaneConfig build(
            String nodeLabel,
            boolean remover,
            boolean storer,
            long mooncakeSegment,
            DataplaneRole... duty) {
        RoleKeys engineKeys = keys.only(duty);
        if (!keys.isEmpty() && !engineKeys.has(duty[0])) {
            throw new DataplaneSettingsException(
                    P
                            + "secret-file holds "
                            + keys
                            + " but this service's engine proves role "
                            + duty[0].label()
                            + ": give it the "
                            + duty[0].label()
                            + " key");
        }
        String configured = nodeLabel();
        if (configured != null && !configured.equals(nodeLabel)) {
            throw new DataplaneSettingsException(
                    P
                            + "node-label="
                            + configured
                            + " but this process runs its data plane on node "
                            + nodeLabel);
        }
        return DataplaneConfig.builder(nodeLabel)
                .redisUri(properties.redisUri())
                .keyPrefix(properties.keyPrefix())
                .tcpBindHost(Hosts.bare(properties.bindHost()))
                .advertiseHost(advertiseHost)
                .tcpPort(properties.tcpPort())
                .tcpStreams(properties.streamsPerPeer())
                .localThreads(properties.localThreads())
                .ioTimeout(properties.ioTimeout())
                .connectTimeout(properties.connectTimeout())
                .maxConnections(properties.effectiveMaxConnections())
                .idleTimeout(properties.idleTimeout())
                .shmDir(properties.shmDir())
                .roleKeys(engineKeys)
                .hostId(blank(properties.hostId()) ? null : properties.hostId().trim())
                .remover(remover)
                .storer(storer)
                .redisCaCertificate(properties.redisCaCertificate())
                .engine(engine)
                .mooncake(engine == DataplaneEngine.MOONCAKE ? mooncake(mooncakeSegment) : null)
                .build();
    }

    /**
     * The agent configuration of this service's Mooncake engine, mounting {@code segmentSize} bytes
     * of store capacity (0: a reading client).
     */
    private MooncakeConfig mooncake(long segmentSize) {
        MooncakeProperties mc = properties.mooncake();
        return new MooncakeConfig(
                mc.python(),
                mc.pythonPath(),
                mc.commandPrefix(),
                mc.master().trim(),
                mc.hostname().trim(),
                segmentSize,
                mc.protocol(),
                mc.metadataUrl(),
                mc.workDir(),
                mc.startTimeout(),
                mc.commandTimeout(),
                mc.leaseWait());
    }

    /**
     * Checks a URL the service is configured to advertise: refused when its host is a wildcard, or
     * loopback while peers run on other hosts.
     *
     * @param property the property it came from, named in the refusal
     * @throws DataplaneSettingsException as above
     */
    public void checkAdvertisedUrl(String property, String url) {
        String host = Hosts.hostOf(url);
        if (host == null) {
            throw new DataplaneSettingsException(
                    property + "=" + url + " is not an absolute URL with a host");
        }
        if (Hosts.isWildcard(host)) {
            throw new DataplaneSettingsException(
                    property + "=" + url + " names a wildcard address no peer can connect to");
        }
        if (multiHost && Hosts.isLoopback(host)) {
            throw new DataplaneSettingsException(
                    property
                            + "="
                            + url
                            + " is a loopback address, but peers run on other hosts ("
                            + multiHostReason
                            + "): set it to a URL they reach, or leave it empty to derive it"
                            + " from "
                            + P
                            + "advertise-host");
        }
    }

    /**
     * The HTTP base URL this service advertises: {@code configured} when set (check it with {@link
     * #checkAdvertisedUrl} at start-up), else {@code http://<advertise host>:<port>}.
     */
    public String advertisedUrl(String configured, int port) {
        if (!blank(configured)) {
            return configured.trim();
        }
        return "http://" + Hosts.forUrl(advertiseHost) + ":" + port;
    }

    /**
     * {@link #advertisedUrl(String, int)} on the port this server listens on: {@code
     * local.server.port} once the web server has started, else {@code server.port}, else {@code
     * defaultPort}.
     */
    public String advertisedUrl(String configured, Environment environment, int defaultPort) {
        int port =
                environment.getProperty(
                        "local.server.port",
                        Integer.class,
                        environment.getProperty("server.port", Integer.class, defaultPort));
        return advertisedUrl(configured, port);
    }

    /** {@code host:port} of this process's engine as peers reach it ({@code [v6]:port}). */
    public String endpoint(int tcpPort) {
        return Hosts.forUrl(advertiseHost) + ":" + tcpPort;
    }

    @Override
    public String toString() {
        return "DataplaneSettings["
                + properties
                + ", advertiseHost="
                + advertiseHost
                + ", multiHost="
                + multiHost
                + ", authenticated="
                + authenticated()
                + "]";
    }
}
