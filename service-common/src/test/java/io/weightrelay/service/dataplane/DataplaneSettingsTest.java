package io.weightrelay.service.dataplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.dataplane.DataplaneRole;
import io.weightrelay.dataplane.MooncakeConfig;
import io.weightrelay.dataplane.RoleKeys;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code relay.dataplane.*} as a service's context binds it: what starts, what refuses to start and
 * with which property named, and what the one factory hands the engine.
 */
class DataplaneSettingsTest {

    private static final String SECRET = "0123456789abcdef0123456789abcdef";

    /** The venv interpreter the project's Mooncake agent runs on (what CI and the lab have). */
    private static final String PYTHON =
            System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv")
                    + "/bin/python";

    private final ApplicationContextRunner context =
            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(DataplaneAutoConfiguration.class));

    private void refuses(String message, String... properties) {
        context.withPropertyValues(properties)
                .run(
                        started -> {
                            assertThat(started).hasFailed();
                            Throwable cause = started.getStartupFailure();
                            while (!(cause instanceof DataplaneSettingsException)
                                    && cause.getCause() != null) {
                                cause = cause.getCause();
                            }
                            assertThat(cause)
                                    .isInstanceOf(DataplaneSettingsException.class)
                                    .hasMessageContaining(message);
                            assertThat(cause.getMessage()).doesNotContain(SECRET);
                        });
    }

    @Test
    void defaultsAreOneHostOnLoopbackWithoutSecret() {
        context.run(
                started -> {
                    DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                    assertThat(settings.multiHost()).isFalse();
                    assertThat(settings.authenticated()).isFalse();
                    DataplaneConfig config = settings.config("node-0");
                    assertThat(config.tcpBindHost()).isEqualTo("127.0.0.1");
                    assertThat(config.advertiseHost()).isEqualTo("127.0.0.1");
                    assertThat(config.tcpPort()).isZero();
                    assertThat(config.redisUri()).isEqualTo("redis://127.0.0.1:6379");
                    assertThat(config.keyPrefix()).isEqualTo("wr:dp:");
                    assertThat(config.shmDir()).isEqualTo(Path.of("/dev/shm"));
                    assertThat(settings.advertisedUrl("", 8081)).isEqualTo("http://127.0.0.1:8081");
                });
    }

    @Test
    void everyPropertyReachesTheEngineConfig(@TempDir Path dir) throws Exception {
        Path secretFile = dir.resolve("secret");
        Files.writeString(secretFile, SECRET + "\n");
        context.withPropertyValues(
                        "relay.dataplane.bind-host=::",
                        "relay.dataplane.advertise-host=publisher-0",
                        "relay.dataplane.tcp-port=18081",
                        "relay.dataplane.shm-dir=/dev/shm/wr-h2",
                        "relay.dataplane.connect-timeout=2s",
                        "relay.dataplane.io-timeout=7s",
                        "relay.dataplane.streams-per-peer=3",
                        "relay.dataplane.max-connections=9",
                        "relay.dataplane.idle-timeout=45s",
                        "relay.dataplane.local-threads=4",
                        "relay.dataplane.redis-uri=redis://redis:6379",
                        "relay.dataplane.key-prefix=wr:dp:x:",
                        "relay.dataplane.host-id=host-a",
                        "relay.dataplane.secret-file=" + secretFile)
                .run(
                        started -> {
                            assertThat(started).hasNotFailed();
                            DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                            assertThat(settings.multiHost()).isTrue();
                            DataplaneConfig c = settings.config("trainer-0000");
                            assertThat(c.nodeLabel()).isEqualTo("trainer-0000");
                            assertThat(c.tcpBindHost()).isEqualTo("::");
                            assertThat(c.advertiseHost()).isEqualTo("publisher-0");
                            assertThat(c.tcpPort()).isEqualTo(18081);
                            assertThat(c.shmDir()).isEqualTo(Path.of("/dev/shm/wr-h2"));
                            assertThat(c.connectTimeout()).isEqualTo(Duration.ofSeconds(2));
                            assertThat(c.ioTimeout()).isEqualTo(Duration.ofSeconds(7));
                            assertThat(c.tcpStreams()).isEqualTo(3);
                            assertThat(c.maxConnections()).isEqualTo(9);
                            assertThat(c.idleTimeout()).isEqualTo(Duration.ofSeconds(45));
                            assertThat(c.localThreads()).isEqualTo(4);
                            assertThat(c.redisUri()).isEqualTo("redis://redis:6379");
                            assertThat(c.keyPrefix()).isEqualTo("wr:dp:x:");
                            assertThat(c.hostId()).isEqualTo("host-a");
                            // A loader's engine: the peer key of the deployment secret, only.
                            assertThat(c.roleKeys())
                                    .isEqualTo(
                                            io.weightrelay.dataplane.RoleKeys.derive(
                                                            SECRET.getBytes(
                                                                    StandardCharsets.US_ASCII))
                                                    .only(
                                                            io.weightrelay.dataplane.DataplaneRole
                                                                    .PEER));
                            assertThat(settings.advertisedUrl(null, 8081))
                                    .isEqualTo("http://publisher-0:8081");
                            assertThat(settings.toString()).doesNotContain(SECRET);
                            assertThat(c.toString()).doesNotContain(SECRET);
                            // The secret came from secretFile: the property itself is unset.
                            assertThat(settings.toString())
                                    .contains("DataplaneProperties[nodeLabel=", "secret=none");
                            assertThat(c.toString())
                                    .startsWith("DataplaneConfig[nodeLabel=")
                                    .contains(
                                            "roleKeys=RoleKeys[peer]",
                                            "redisUri=redis://redis:6379");
                        });
    }

    @Test
    void theDefaultConnectionCapFollowsFromTheClusterSize() {
        context.run(
                started -> {
                    DataplaneConfig c = started.getBean(DataplaneSettings.class).config("node-0");
                    // 128 engines, each with the loaders' 4 streams and a control connection
                    assertThat(c.maxConnections()).isEqualTo(640);
                    assertThat(c.idleTimeout()).isEqualTo(Duration.ofSeconds(60));
                });
        assertConnectionCap(1500, "relay.dataplane.cluster-engines=300");
        assertConnectionCap(
                90, "relay.dataplane.cluster-engines=10", "relay.dataplane.streams-per-peer=8");
    }

    /** With {@code properties}, a node's engine accepts at most {@code cap} connections. */
    private void assertConnectionCap(int cap, String... properties) {
        context.withPropertyValues(properties)
                .run(
                        started ->
                                assertThat(
                                                started.getBean(DataplaneSettings.class)
                                                        .config("node-0")
                                                        .maxConnections())
                                        .isEqualTo(cap));
    }

    @Test
    void ipv6AdvertiseHostsGoInBracketsInUrls() {
        context.withPropertyValues(
                        "relay.dataplane.bind-host=::",
                        "relay.dataplane.advertise-host=[fd00::7]",
                        "relay.dataplane.multi-host=true",
                        "relay.dataplane.secret=" + SECRET)
                .run(
                        started -> {
                            DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                            assertThat(settings.config("n").advertiseHost()).isEqualTo("fd00::7");
                            assertThat(settings.advertisedUrl("", 8082))
                                    .isEqualTo("http://[fd00::7]:8082");
                        });
    }

    @Test
    void theEngineIsBuiltinByDefaultAndAnUnknownOneIsRefusedNamingTheProperty() {
        context.run(
                started ->
                        assertThat(
                                        started.getBean(DataplaneSettings.class)
                                                .config("node-0")
                                                .engine())
                                .isEqualTo(DataplaneEngine.BUILTIN));
        context.withPropertyValues("relay.dataplane.engine=BuiltIn")
                .run(
                        started ->
                                assertThat(started.getBean(DataplaneSettings.class).engine())
                                        .isEqualTo(DataplaneEngine.BUILTIN));
        refuses(
                "relay.dataplane.engine=rdma: no data-plane engine 'rdma': builtin or mooncake",
                "relay.dataplane.engine=rdma");
    }

    @Test
    void mooncakePropertiesReachTheAgentsConfigAndOnlyASegmentOwnerMountsCapacity(
            @TempDir Path dir) {
        context.withPropertyValues(
                        "relay.dataplane.engine=mooncake",
                        "relay.dataplane.mooncake.master=127.0.0.1:50051",
                        "relay.dataplane.mooncake.metadata-url=http://127.0.0.1:8090/metadata",
                        "relay.dataplane.mooncake.python=" + PYTHON,
                        "relay.dataplane.mooncake.python-path=" + dir,
                        "relay.dataplane.mooncake.hostname=198.18.0.5",
                        "relay.dataplane.mooncake.protocol=rdma",
                        "relay.dataplane.mooncake.command-prefix=ip,netns,exec,wr-mc",
                        "relay.dataplane.mooncake.work-dir=" + dir,
                        "relay.dataplane.mooncake.start-timeout=9s",
                        "relay.dataplane.mooncake.command-timeout=8s",
                        "relay.dataplane.mooncake.lease-wait=7s")
                .run(
                        started -> {
                            DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                            assertThat(settings.engine()).isEqualTo(DataplaneEngine.MOONCAKE);
                            DataplaneConfig owner = settings.storeOwnerConfig("node-0", 256L << 20);
                            assertThat(owner.engine()).isEqualTo(DataplaneEngine.MOONCAKE);
                            assertThat(owner.mooncake())
                                    .isEqualTo(
                                            new MooncakeConfig(
                                                    Path.of(PYTHON),
                                                    dir,
                                                    List.of("ip", "netns", "exec", "wr-mc"),
                                                    "127.0.0.1:50051",
                                                    "198.18.0.5",
                                                    256L << 20,
                                                    "rdma",
                                                    "http://127.0.0.1:8090/metadata",
                                                    dir,
                                                    Duration.ofSeconds(9),
                                                    Duration.ofSeconds(8),
                                                    Duration.ofSeconds(7)));
                            assertThat(settings.config("node-0").mooncake().segmentSize()).isZero();
                            assertThat(settings.removerConfig("control-api").mooncake())
                                    .satisfies(
                                            mc -> {
                                                assertThat(mc.segmentSize()).isZero();
                                                assertThat(mc.master())
                                                        .isEqualTo("127.0.0.1:50051");
                                            });
                        });
        context.withPropertyValues(
                        "relay.dataplane.engine=mooncake",
                        "relay.dataplane.mooncake.master=127.0.0.1:50051",
                        "relay.dataplane.mooncake.python=" + PYTHON)
                .run(
                        started -> {
                            MooncakeConfig mc =
                                    started.getBean(DataplaneSettings.class)
                                            .storeOwnerConfig("node-0", 256L << 20)
                                            .mooncake();
                            assertThat(mc.hostname()).isEqualTo("127.0.0.1");
                            assertThat(mc.protocol()).isEqualTo("tcp");
                            assertThat(mc.metadata()).isEqualTo(MooncakeConfig.P2P_HANDSHAKE);
                            assertThat(mc.segmentSize()).isEqualTo(256L << 20);
                        });
        context.run(
                started ->
                        assertThat(
                                        started.getBean(DataplaneSettings.class)
                                                .storeOwnerConfig("node-0", 256L << 20)
                                                .mooncake())
                                .isNull());
    }

    @Test
    void theMooncakeEngineRefusesToStartWithoutWhatItsAgentNeedsNamingTheProperty(
            @TempDir Path dir) {
        String engine = "relay.dataplane.engine=mooncake";
        String master = "relay.dataplane.mooncake.master=127.0.0.1:50051";
        String python = "relay.dataplane.mooncake.python=" + PYTHON;
        refuses("relay.dataplane.mooncake.master is required", engine, python);
        refuses(
                "relay.dataplane.mooncake.master=mooncake-master is not host:port",
                engine,
                python,
                "relay.dataplane.mooncake.master=mooncake-master");
        refuses(
                "relay.dataplane.mooncake.master=127.0.0.1:70000 is not host:port",
                engine,
                python,
                "relay.dataplane.mooncake.master=127.0.0.1:70000");
        refuses(
                "relay.dataplane.mooncake.hostname=node-0 is not an IP literal",
                engine,
                master,
                python,
                "relay.dataplane.mooncake.hostname=node-0");
        refuses(
                "relay.dataplane.mooncake.python=" + dir + " is not an executable file",
                engine,
                master,
                "relay.dataplane.mooncake.python=" + dir);
        context.withPropertyValues(engine, master, python, "relay.dataplane.mooncake.protocol=udp")
                .run(started -> assertThat(started).hasFailed());
        context.withPropertyValues(engine, master, python)
                .run(
                        started -> {
                            DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                            assertThat(settings.config("node-0").mooncake().segmentSize()).isZero();
                            assertThatThrownBy(() -> settings.storeOwnerConfig("node-0", 0))
                                    .isInstanceOf(DataplaneSettingsException.class)
                                    .hasMessageContaining("engine=mooncake mounts its segment's 0");
                        });
        // the built-in engine ignores the agent's settings
        context.withPropertyValues("relay.dataplane.mooncake.hostname=node-0")
                .run(started -> assertThat(started).hasNotFailed());
    }

    @Test
    void aWildcardBindWithoutAdvertiseHostRefusesToStart() {
        refuses("relay.dataplane.advertise-host", "relay.dataplane.bind-host=0.0.0.0");
        refuses("relay.dataplane.bind-host=::", "relay.dataplane.bind-host=::");
    }

    @Test
    void aWildcardAdvertiseHostRefusesToStart() {
        refuses(
                "relay.dataplane.advertise-host=0.0.0.0",
                "relay.dataplane.bind-host=0.0.0.0",
                "relay.dataplane.advertise-host=0.0.0.0");
    }

    @Test
    void loopbackWhilePeersAreOnOtherHostsRefusesToStart() {
        // peers elsewhere, declared
        refuses(
                "relay.dataplane.bind-host=127.0.0.1 is a loopback address",
                "relay.dataplane.multi-host=true",
                "relay.dataplane.secret=" + SECRET);
        refuses(
                "relay.dataplane.advertise-host=localhost is a loopback address",
                "relay.dataplane.multi-host=true",
                "relay.dataplane.advertise-host=localhost",
                "relay.dataplane.secret=" + SECRET);
        // peers elsewhere, inferred from a Redis on another host
        refuses(
                "relay.dataplane.redis-uri",
                "relay.dataplane.redis-uri=redis://redis.example:6379",
                "relay.dataplane.secret=" + SECRET);
        refuses(
                "relay.dataplane.advertise-host",
                "relay.dataplane.bind-host=::1",
                "relay.dataplane.redis-uri=redis://198.18.0.2:6379",
                "relay.dataplane.secret=" + SECRET);
    }

    @Test
    void multiHostFalseKeepsALoopbackDeploymentWithARemoteLookingRedis() {
        context.withPropertyValues(
                        "relay.dataplane.redis-uri=redis://redis:6379",
                        "relay.dataplane.multi-host=false")
                .run(
                        started ->
                                assertThat(started.getBean(DataplaneSettings.class).multiHost())
                                        .isFalse());
    }

    @Test
    void peersOnOtherHostsRequireASecret() {
        refuses(
                "relay.dataplane.secret-file",
                "relay.dataplane.multi-host=true",
                "relay.dataplane.advertise-host=198.18.0.5");
    }

    @Test
    void badSecretsRefuseToStartWithoutPrintingThem(@TempDir Path dir) throws Exception {
        Path secretFile = dir.resolve("secret");
        Files.writeString(secretFile, SECRET);
        refuses(
                "not both",
                "relay.dataplane.secret=" + SECRET,
                "relay.dataplane.secret-file=" + secretFile);
        refuses("relay.dataplane.secret holds 5 bytes", "relay.dataplane.secret=short");
        refuses(
                "cannot read relay.dataplane.secret-file=" + dir.resolve("absent"),
                "relay.dataplane.secret-file=" + dir.resolve("absent"));
        Files.writeString(dir.resolve("empty"), "\n");
        refuses(
                "relay.dataplane.secret-file=" + dir.resolve("empty") + " holds 0 bytes",
                "relay.dataplane.secret-file=" + dir.resolve("empty"));
    }

    /**
     * A key file hands each service only its role keys: a loader's engine holds the peer key and
     * nothing else, so it can neither claim nor check the remover or storer roles; a file without
     * the key of the service's own role refuses to start, naming the role; a malformed file is
     * refused without printing a key.
     */
    @Test
    void aKeyFileGivesEachEngineOnlyTheKeysOfItsDuty(@TempDir Path dir) throws Exception {
        RoleKeys all = RoleKeys.derive(SECRET.getBytes(StandardCharsets.US_ASCII));
        Path loaderKeys = dir.resolve("loader.keys");
        Files.writeString(
                loaderKeys, "# the loader's keys\n" + all.only(DataplaneRole.PEER).format());
        context.withPropertyValues("relay.dataplane.secret-file=" + loaderKeys)
                .run(
                        started -> {
                            DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                            DataplaneConfig loader = settings.config("rollout-0");
                            assertThat(loader.roleKeys().roles())
                                    .containsExactly(DataplaneRole.PEER);
                            assertThat(loader.authenticated()).isTrue();
                            assertThat(
                                            settings.storeOwnerConfig("rollout-0", 1L << 30)
                                                    .roleKeys()
                                                    .roles())
                                    .containsExactly(DataplaneRole.PEER);
                            assertThatThrownBy(() -> settings.removerConfig("control-api"))
                                    .isInstanceOf(DataplaneSettingsException.class)
                                    .hasMessageContaining("proves role remover")
                                    .hasMessageContaining("RoleKeys[peer]");
                        });
        Path ownerKeys = dir.resolve("owner.keys");
        Files.writeString(ownerKeys, all.format());
        context.withPropertyValues("relay.dataplane.secret-file=" + ownerKeys)
                .run(
                        started -> {
                            DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                            assertThat(settings.storeOwnerConfig("trainer-0", 1L << 30).roleKeys())
                                    .isEqualTo(all);
                            assertThat(settings.config("rollout-0").roleKeys().roles())
                                    .containsExactly(DataplaneRole.PEER);
                            assertThat(settings.removerConfig("control-api").roleKeys().roles())
                                    .containsExactly(DataplaneRole.REMOVER);
                        });
        Path bad = dir.resolve("bad.keys");
        String key = all.format().lines().findFirst().orElseThrow().substring("peer=".length());
        Files.writeString(bad, "reader=" + key + "\n");
        refuses("line 1: unknown data-plane role 'reader'", "relay.dataplane.secret-file=" + bad);
        Files.writeString(bad, "peer=" + key.substring(2) + "\n");
        refuses("the peer key holds 31 bytes", "relay.dataplane.secret-file=" + bad);
    }

    @Test
    void advertisedUrlsAreCheckedLikeTheAdvertiseHost() {
        DataplaneSettings multi =
                new DataplaneSettings(
                        new DataplaneProperties(
                                null,
                                null,
                                "0.0.0.0",
                                "loader-0",
                                0,
                                Path.of("/dev/shm"),
                                Duration.ofSeconds(5),
                                Duration.ofSeconds(30),
                                2,
                                128,
                                256,
                                Duration.ofSeconds(60),
                                2,
                                "redis://redis:6379",
                                "wr:dp:",
                                SECRET,
                                null,
                                null,
                                null,
                                "builtin",
                                MooncakeProperties.defaults()));
        assertThatThrownBy(
                        () ->
                                multi.checkAdvertisedUrl(
                                        "relay.loader.advertise-url", "http://127.0.0.1:8082"))
                .isInstanceOf(DataplaneSettingsException.class)
                .hasMessageContaining("relay.loader.advertise-url=http://127.0.0.1:8082")
                .hasMessageContaining("loopback");
        assertThatThrownBy(
                        () ->
                                multi.checkAdvertisedUrl(
                                        "relay.segment.admin-url", "http://0.0.0.0:1"))
                .hasMessageContaining("relay.segment.admin-url")
                .hasMessageContaining("wildcard");
        assertThatThrownBy(() -> multi.checkAdvertisedUrl("relay.segment.admin-url", "loader-0"))
                .hasMessageContaining("not an absolute URL");
        multi.checkAdvertisedUrl("relay.loader.advertise-url", "http://loader-0:8082");

        DataplaneSettings single =
                new DataplaneSettings(
                        DataplaneProperties.loopback("redis://127.0.0.1:6379", "wr:dp:"));
        single.checkAdvertisedUrl("relay.loader.advertise-url", "http://127.0.0.1:8082");
    }

    @Test
    void aConfiguredNodeLabelMustBeTheOneTheServiceRunsOn() {
        context.withPropertyValues("relay.dataplane.node-label=trainer-0000")
                .run(
                        started -> {
                            DataplaneSettings settings = started.getBean(DataplaneSettings.class);
                            assertThat(settings.config("trainer-0000").nodeLabel())
                                    .isEqualTo("trainer-0000");
                            assertThatThrownBy(() -> settings.config("trainer-0001"))
                                    .isInstanceOf(DataplaneSettingsException.class)
                                    .hasMessageContaining(
                                            "relay.dataplane.node-label=trainer-0000");
                        });
    }
}
