package io.weightrelay.dataplane;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

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
        Path shmDir) {

    public DataplaneConfig {
        Objects.requireNonNull(nodeLabel, "nodeLabel");
        Objects.requireNonNull(redisUri, "redisUri");
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        Objects.requireNonNull(tcpBindHost, "tcpBindHost");
        Objects.requireNonNull(ioTimeout, "ioTimeout");
        Objects.requireNonNull(shmDir, "shmDir");
        if (nodeLabel.isBlank()) {
            throw new IllegalArgumentException("nodeLabel must not be blank");
        }
        if (!keyPrefix.startsWith("wr:")) {
            throw new IllegalArgumentException("keyPrefix must start with 'wr:': " + keyPrefix);
        }
        if (advertiseHost == null) {
            advertiseHost = tcpBindHost;
        }
        if (tcpPort < 0 || tcpPort > 65535 || tcpStreams < 1 || localThreads < 1) {
            throw new IllegalArgumentException("bad port, stream or thread count");
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
                    shmDir);
        }
    }
}
