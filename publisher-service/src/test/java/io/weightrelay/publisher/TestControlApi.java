package io.weightrelay.publisher;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.RegisteredObject;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.testkit.redis.RedisTestSupport;
import io.weightrelay.trainer.client.RestCoordinator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The real control-api for the tests of one class: started from its {@code -exec} jar as a child
 * JVM on a free loopback port, against the test Redis under a key prefix of its own, and sharing
 * the data-plane key prefix of the publisher under test (so its aborts remove that publisher's
 * objects). The build passes the jar's path in {@value #JAR_PROPERTY}; a missing jar fails the test
 * with the command that builds it. Both services accept the tokens of {@link
 * TestPublisherProperties}. Not thread safe: the test class starts and closes it.
 */
public final class TestControlApi implements AutoCloseable {

    /** System property holding the path of control-api's {@code -exec} jar. */
    public static final String JAR_PROPERTY = "relay.control-api.jar";

    private static final Logger log = LoggerFactory.getLogger(TestControlApi.class);
    private static final String BUILD_IT =
            "build it first with: mvn -B -DskipTests install -pl control-api -am"
                    + " (a reactor mvn verify packages control-api before publisher-service)";

    private final ServiceProcess process;
    private final String keyPrefix;
    private final RedisClient redis;
    private final StatefulRedisConnection<String, String> connection;

    private TestControlApi(ServiceProcess process, String keyPrefix) {
        this.process = process;
        this.keyPrefix = keyPrefix;
        RedisTestSupport.Endpoint endpoint = RedisTestSupport.endpoint();
        this.redis = RedisClient.create(RedisURI.create(endpoint.host(), endpoint.port()));
        this.connection = redis.connect();
    }

    /**
     * Starts control-api and waits until it is healthy.
     *
     * @param test names the run in the Redis key prefix and the log file
     * @param dataplanePrefix the data-plane key prefix of the publisher under test
     */
    public static TestControlApi start(String test, String dataplanePrefix) {
        Path jar = jar();
        String keyPrefix = RedisTestSupport.uniqueKeyPrefix(test + "-control");
        RedisTestSupport.Endpoint redis = RedisTestSupport.endpoint();
        ServiceProcess process =
                ServiceProcess.start(
                        "control-api-" + test,
                        jar,
                        "256m",
                        List.of("-XX:TieredStopAtLevel=1"),
                        List.of(
                                "--spring.data.redis.host=" + redis.host(),
                                "--spring.data.redis.port=" + redis.port(),
                                "--relay.redis.key-prefix=" + keyPrefix,
                                "--relay.dataplane.key-prefix=" + dataplanePrefix,
                                "--relay.dataplane.secret=" + TestDataplane.SECRET,
                                "--relay.generations.scheduled-gc=false",
                                "--relay.security.tokens.trainer[0]="
                                        + TestPublisherProperties.TRAINER_TOKEN,
                                "--relay.security.tokens.operator[0]="
                                        + TestPublisherProperties.OPERATOR_TOKEN,
                                "--relay.security.tokens.owner[0]="
                                        + TestPublisherProperties.SEGMENT_OWNER_TOKEN,
                                "--relay.checkpoints.owner-token="
                                        + TestPublisherProperties.OWNER_TOKEN),
                        logDirectory());
        try {
            process.awaitHealthy(Duration.ofMinutes(2));
        } catch (InterruptedException e) {
            stop(process, keyPrefix);
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while control-api started", e);
        } catch (RuntimeException e) {
            stop(process, keyPrefix);
            throw e;
        }
        log.info(
                "control-api for {} runs at {} (Redis key prefix {}, data plane {})",
                test,
                process.baseUrl(),
                keyPrefix,
                dataplanePrefix);
        return new TestControlApi(process, keyPrefix);
    }

    public String baseUrl() {
        return process.baseUrl();
    }

    /** The trainer coordinator's side (open, commit, abort), as a trainer hook would use it. */
    public RestCoordinator coordinator(long maxFragmentBytes) {
        return new RestCoordinator(
                baseUrl(),
                TestPublisherProperties.TRAINER_TOKEN,
                Duration.ofSeconds(60),
                maxFragmentBytes);
    }

    /** The generations API with the operator token (reads everything, may abort). */
    public GenerationsApi generations() {
        return generations(TestPublisherProperties.OPERATOR_TOKEN);
    }

    /** The generations API with {@code token}. */
    public GenerationsApi generations(String token) {
        return new GenerationsApi(client(token));
    }

    /** The registry of segment owners and loaders, with the operator token. */
    public RegistryApi registry() {
        return new RegistryApi(client(TestPublisherProperties.OPERATOR_TOKEN));
    }

    public Generation generation(String model, long generation) {
        return generations().getGeneration(model, generation);
    }

    /**
     * The objects control-api holds as registered for a generation, by store key: size, checksum
     * and segments exactly as recorded. The REST contract exposes only their count, so this reads
     * control-api's own record ({@code gen-objects:{m}:{g}}, {@code size|checksum|segments} per
     * fragment, see control-api's README).
     */
    public Map<String, RegisteredObject> registeredObjects(String model, long generation) {
        Map<String, String> fields =
                connection.sync().hgetall(keyPrefix + "gen-objects:" + model + ":" + generation);
        Map<String, RegisteredObject> out = new TreeMap<>();
        fields.forEach(
                (fragment, value) -> {
                    String[] parts = value.split("\\|", -1);
                    String key = model + "/" + generation + "/" + fragment;
                    out.put(
                            key,
                            new RegisteredObject()
                                    .key(key)
                                    .size(Long.parseLong(parts[0]))
                                    .checksum(parts[1])
                                    .segments(
                                            parts[2].isEmpty()
                                                    ? List.of()
                                                    : Arrays.asList(parts[2].split(","))));
                });
        return out;
    }

    /**
     * Deletes every key of control-api's prefix while it runs, as Redis restarted without its data
     * would: its incarnation mark, generations, registrations and sessions are gone.
     */
    public void loseData() {
        RedisTestSupport.deleteKeys(keyPrefix);
    }

    /** Ends control-api at once (SIGKILL), keeping its keys: it answers nobody from now on. */
    public void kill() {
        process.kill();
    }

    /**
     * Stops control-api, then deletes its keys. The data-plane prefix it shares belongs to the
     * test, which deletes it once its publisher has stopped too.
     */
    @Override
    public void close() {
        try {
            connection.close();
            redis.shutdown();
        } finally {
            stop(process, keyPrefix);
        }
    }

    private static void stop(ServiceProcess process, String keyPrefix) {
        process.close();
        RedisTestSupport.deleteKeys(keyPrefix);
    }

    private ApiClient client(String token) {
        return RelayClients.of(Endpoint.of(baseUrl(), token)).control();
    }

    private static Path jar() {
        String configured = System.getProperty(JAR_PROPERTY);
        if (configured == null || configured.isBlank()) {
            throw new IllegalStateException(
                    "system property "
                            + JAR_PROPERTY
                            + " (control-api's -exec jar) is not set; publisher-service's pom sets"
                            + " it for surefire. Run the tests with Maven, or set it to"
                            + " control-api/target/control-api-<version>-exec.jar; "
                            + BUILD_IT);
        }
        Path jar = Path.of(configured).toAbsolutePath().normalize();
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(
                    "control-api's executable jar " + jar + " does not exist; " + BUILD_IT);
        }
        return jar;
    }

    /** The module's {@code target/} when run by Maven, so the log outlives the run. */
    private static Path logDirectory() {
        Path target = Path.of("target");
        try {
            return Files.isDirectory(target)
                    ? target
                    : Files.createTempDirectory("wr-test-control-api-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
