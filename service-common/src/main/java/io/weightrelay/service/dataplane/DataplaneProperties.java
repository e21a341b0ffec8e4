package io.weightrelay.service.dataplane;

import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.RedisUris;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * How this process's data plane binds, advertises, authenticates and finds the store ({@code
 * relay.dataplane.*}), the same for control-api, every publisher and every loader. {@link
 * DataplaneSettings} checks the combination at start-up and is the only way to turn it into an
 * engine configuration.
 *
 * @param nodeLabel node label of this process's engine: engines with the same label (and the same
 *     host identity) copy over shared memory, others over tcp. Empty: control-api uses {@code
 *     control-api}, a publisher its {@code relay.segment.node}, a loader the node its engine
 *     registers; when set, a publisher or loader refuses a different node
 * @param hostId identity of this host (empty: the engine derives it from the machine id and the shm
 *     directory); the local transport is used only when label and host identity both match
 * @param bindHost address (literal or host name, IPv4 or IPv6) the engine's tcp server binds;
 *     {@code 0.0.0.0} or {@code ::} bind every interface and then require {@code advertiseHost}
 * @param advertiseHost address peers reach this process at, its engine and its HTTP URLs (empty:
 *     the bind host)
 * @param tcpPort port of the engine's tcp server, 0 for any free port, fixed so a firewall can be
 *     opened for it
 * @param shmDir directory of this process's shared-memory segment files
 * @param connectTimeout how long connecting to a peer engine may take
 * @param ioTimeout after this much silence on a connection a peer counts as gone
 * @param streamsPerPeer tcp connections per peer engine
 * @param clusterEngines how many engines of the deployment may connect to this one at once
 *     (publishers, storage units, loaders, control-api instances); sizes the default {@code
 *     maxConnections}
 * @param maxConnections cap on the authenticated tcp connections this engine's server holds at
 *     once; empty: {@code clusterEngines * (max(streamsPerPeer, 4) + 1)}, every peer's streams (4
 *     are the loaders') plus its control connection ({@link DataplaneConfig#maxConnectionsFor})
 * @param idleTimeout an authenticated connection without a request for this long is closed by the
 *     server; clients reconnect transparently
 * @param localThreads copy threads of the local (shared-memory) transport
 * @param redisUri Redis holding the store's object directory and the segment descriptors
 * @param keyPrefix prefix of the data plane's Redis keys (one store: the same everywhere)
 * @param secret the per-deployment secret every tcp connection proves it knows; never logged.
 *     Prefer {@code secretFile} or the environment ({@code RELAY_DATAPLANE_SECRET})
 * @param secretFile a file holding the secret (trailing whitespace ignored), e.g. a mounted secret
 * @param multiHost whether peers run on other hosts; empty: they do when the Redis of {@code
 *     redisUri} is not on loopback. A process with peers on other hosts refuses to advertise a
 *     loopback address and to run without a secret
 * @param redisCaCertificate a PEM file of the certificate authorities trusted when the store's
 *     Redis speaks TLS ({@code rediss://}); empty: the PEM trust store of the Spring SSL bundle
 *     named by {@code spring.data.redis.ssl.bundle} when there is one, else the JVM's trust store
 * @param engine the data-plane engine: {@code builtin} (the embedded default) or {@code mooncake}
 *     (the real Mooncake Store and Transfer Engine through an agent, {@code mooncake})
 * @param mooncake how the Mooncake engine runs its agent ({@code relay.dataplane.mooncake.*})
 */
@Validated
@ConfigurationProperties("relay.dataplane")
public record DataplaneProperties(
        String nodeLabel,
        String hostId,
        @NotBlank @DefaultValue("127.0.0.1") String bindHost,
        String advertiseHost,
        @Min(0) @Max(65535) @DefaultValue("0") int tcpPort,
        @NotNull @DefaultValue("/dev/shm") Path shmDir,
        @NotNull @DefaultValue("5s") Duration connectTimeout,
        @NotNull @DefaultValue("30s") Duration ioTimeout,
        @Min(1) @DefaultValue("2") int streamsPerPeer,
        @Min(1) @DefaultValue("128") int clusterEngines,
        @Min(1) Integer maxConnections,
        @NotNull @DefaultValue("60s") Duration idleTimeout,
        @Min(1) @DefaultValue("2") int localThreads,
        @NotBlank @DefaultValue("redis://127.0.0.1:6379") String redisUri,
        @NotNull @Pattern(regexp = "^wr:.*") @DefaultValue("wr:dp:") String keyPrefix,
        String secret,
        Path secretFile,
        Boolean multiHost,
        Path redisCaCertificate,
        @NotBlank @DefaultValue("builtin") String engine,
        @Valid @NotNull @DefaultValue MooncakeProperties mooncake) {

    /** The defaults (what an empty {@code relay.dataplane} binds to) with this store. */
    public static DataplaneProperties loopback(String redisUri, String keyPrefix) {
        return new DataplaneProperties(
                null,
                null,
                "127.0.0.1",
                null,
                0,
                Path.of("/dev/shm"),
                Duration.ofSeconds(5),
                Duration.ofSeconds(30),
                2,
                DataplaneConfig.DEFAULT_CLUSTER_ENGINES,
                null,
                Duration.ofSeconds(60),
                2,
                redisUri,
                keyPrefix,
                null,
                null,
                null,
                null,
                "builtin",
                MooncakeProperties.defaults());
    }

    /**
     * The same properties with the store's Redis credentials and TLS from Spring Boot's standard
     * {@code spring.data.redis.username} / {@code password} / {@code ssl.enabled}, when {@code
     * redis-uri} carries none of its own.
     */
    public DataplaneProperties withRedisCredentials(String username, String password, boolean ssl) {
        return withRedisCredentials(username, password, ssl, null);
    }

    /**
     * As {@link #withRedisCredentials(String, String, boolean)}, and trusting {@code caCertificate}
     * (PEM) for TLS unless {@code redis-ca-certificate} is set.
     */
    public DataplaneProperties withRedisCredentials(
            String username, String password, boolean ssl, Path caCertificate) {
        return new DataplaneProperties(
                nodeLabel,
                hostId,
                bindHost,
                advertiseHost,
                tcpPort,
                shmDir,
                connectTimeout,
                ioTimeout,
                streamsPerPeer,
                clusterEngines,
                maxConnections,
                idleTimeout,
                localThreads,
                RedisUris.withCredentials(redisUri, username, password, ssl),
                keyPrefix,
                secret,
                secretFile,
                multiHost,
                redisCaCertificate != null ? redisCaCertificate : caCertificate,
                engine,
                mooncake);
    }

    /**
     * The connection cap the engine gets: {@code maxConnections} when set, else room for {@code
     * clusterEngines} peers with the streams of the busiest readers (loaders, 4) or this process's
     * own {@code streamsPerPeer} if higher, each plus a control connection.
     */
    public int effectiveMaxConnections() {
        return maxConnections != null
                ? maxConnections
                : DataplaneConfig.maxConnectionsFor(
                        clusterEngines,
                        Math.max(streamsPerPeer, DataplaneConfig.DEFAULT_PEER_STREAMS));
    }

    /** Every property by name; never the secret, nor the Redis password. */
    @Override
    public String toString() {
        return DataplaneConfig.describe(this);
    }
}
