package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.cluster.LabSecrets;
import io.weightrelay.lab.cluster.LabStore;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The contract fuzz: control-api, a publisher and a loader run as real services (their {@code
 * -exec} jars, control-api on the machine's Redis under a key prefix of this run only), and
 * Schemathesis (pinned in {@code python/requirements.txt}, in the venv {@code python/ci-venv.sh}
 * makes, {@code WEIGHT_RELAY_VENV} like the python module) generates requests from each service's
 * hand-written contract as the service serves it, calling each operation with the token of a role
 * that may call it ({@code src/test/fuzz/*.toml}). Every answer must be no 5xx, have a status,
 * content type, headers and body the contract declares, and every error must be {@code
 * application/problem+json} with a stable type ({@code src/test/fuzz/problem_json.py}).
 *
 * <p>Two operations are left out, on purpose: control-api's {@code saveCheckpoint} and the
 * publisher's {@code saveOwnedObjects} create directories and write files at whatever absolute path
 * the request names, on this machine, as the user CI runs as (root); a fuzz would scatter files
 * over the filesystem. Their restores only read and stay in. The run is bounded ({@code
 * relay.fuzz.max-examples} per operation, 12 by default) and seeded ({@code relay.fuzz.seed}, fixed
 * by default; another seed explores further). A seed does not replay a run exactly (what the
 * services answer steers the stateful phase), so a failure names its case with a curl line.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ContractFuzzTest {

    private static final Duration HEALTHY = Duration.ofMinutes(3);
    private static final Duration ONE_RUN = Duration.ofMinutes(5);
    private static final String CHECKS =
            String.join(
                    ",",
                    "not_a_server_error",
                    "status_code_conformance",
                    "content_type_conformance",
                    "response_headers_conformance",
                    "response_schema_conformance",
                    "problem_json_errors");

    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private final String prefix = "wr:fuzz:" + run + ":";
    private final Path fuzz = Path.of("src", "test", "fuzz").toAbsolutePath();
    private final Path out = Path.of("target", "contract-fuzz").toAbsolutePath();
    private final List<ServiceProcess> services = new ArrayList<>();
    private Path schemathesis;
    private LabSecrets secrets;
    private Map<String, String> tokens;
    private ServiceProcess control;
    private ServiceProcess publisher;
    private ServiceProcess loader;

    @BeforeAll
    void startServices() throws Exception {
        schemathesis = schemathesis();
        Files.createDirectories(out);
        secrets = LabSecrets.create("fuzz-" + run);
        String segment = "fuzz-" + run + "-trainer-0";
        String instance = "fuzz-" + run + "-inst-0";
        // Unbound loader and owner tokens: the fuzz names instances and segments of its own.
        String loaderToken = secrets.loader(instance);
        String ownerToken = secrets.owner(segment);
        Map<String, String> controlSecrets = secrets.controlApi(List.of(), List.of());
        controlSecrets.put("relay.security.tokens.loader[0]", loaderToken);
        controlSecrets.put("relay.security.tokens.owner[0]", ownerToken);
        tokens = new LinkedHashMap<>();
        tokens.put("WR_FUZZ_OPERATOR_TOKEN", secrets.operator());
        tokens.put("WR_FUZZ_TRAINER_TOKEN", secrets.trainer());
        tokens.put("WR_FUZZ_LOADER_TOKEN", loaderToken);
        tokens.put("WR_FUZZ_OWNER_TOKEN", ownerToken);
        tokens.put("WR_FUZZ_OWNER_CALL_TOKEN", controlSecrets.get("relay.checkpoints.owner-token"));

        Path root = ServiceProcess.home();
        String redis = "redis://127.0.0.1:6379";
        String dataplanePrefix = prefix + "dp:";
        String secretFile = secrets.dataplaneSecretFile().toString();
        control =
                track(
                        ServiceProcess.start(
                                "control-api",
                                ServiceProcess.findJar(root, "control-api"),
                                "512m",
                                List.of(
                                        "--spring.data.redis.host=127.0.0.1",
                                        "--spring.data.redis.port=6379",
                                        "--relay.redis.key-prefix=" + prefix,
                                        "--relay.dataplane.key-prefix=" + dataplanePrefix,
                                        "--relay.dataplane.secret-file=" + secretFile,
                                        "--relay.generations.scheduled-gc=false",
                                        secrets.springArg("control-api", controlSecrets)),
                                out));
        publisher =
                track(
                        ServiceProcess.start(
                                "publisher",
                                ServiceProcess.findJar(root, "publisher-service"),
                                "384m",
                                List.of(
                                        "--relay.segment.node=trainer-0",
                                        "--relay.segment.name=" + segment,
                                        "--relay.segment.size=64MB",
                                        "--relay.dataplane.redis-uri=" + redis,
                                        "--relay.dataplane.key-prefix=" + dataplanePrefix,
                                        "--relay.dataplane.secret-file=" + secretFile,
                                        "--relay.staging.mode=segment",
                                        "--relay.staging.capacity=32MB",
                                        "--relay.staging.max-batch-bytes=8MB",
                                        "--relay.publish.control-api-url=" + control.baseUrl(),
                                        secrets.springArg("publisher", secrets.publisher(segment))),
                                out));
        loader =
                track(
                        ServiceProcess.start(
                                "loader",
                                ServiceProcess.findJar(root, "loader-service"),
                                "384m",
                                List.of(
                                        "--relay.loader.control-url=" + control.baseUrl(),
                                        "--relay.dataplane.redis-uri=" + redis,
                                        "--relay.dataplane.key-prefix=" + dataplanePrefix,
                                        "--relay.dataplane.secret-file=" + secretFile,
                                        secrets.springArg(
                                                "loader", secrets.loaderService(instance))),
                                out));
        for (ServiceProcess s : services) {
            s.awaitHealthy(HEALTHY);
        }
    }

    @Test
    @Order(1)
    void controlApiAnswersWhatItsContractSays() throws Exception {
        fuzz(control, "control-api.yaml", "control-api.toml", "saveCheckpoint");
    }

    @Test
    @Order(2)
    void publisherAnswersWhatItsContractSays() throws Exception {
        fuzz(publisher, "publisher.yaml", "publisher.toml", "saveOwnedObjects");
    }

    @Test
    @Order(3)
    void loaderAnswersWhatItsContractSays() throws Exception {
        fuzz(loader, "loader.yaml", "loader.toml", null);
    }

    @AfterAll
    void stopServices() {
        for (ServiceProcess s : services) {
            s.close();
        }
        LabStore.deleteKeys("redis://127.0.0.1:6379", prefix);
        if (secrets != null) {
            secrets.close();
        }
    }

    /**
     * Runs Schemathesis against {@code service}'s contract {@code document} as the service serves
     * it, with {@code config}; fails with Schemathesis' report (each failing case with a curl line
     * to reproduce it) and the service log's tail when any check failed or a request erred.
     */
    private void fuzz(ServiceProcess service, String document, String config, String excluded)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(schemathesis.toString());
        command.add("--no-color");
        command.add("--config-file");
        command.add(fuzz.resolve(config).toString());
        command.add("run");
        command.add(service.baseUrl() + "/openapi/" + document);
        command.add("--url");
        command.add(service.baseUrl());
        command.add("--checks");
        command.add(CHECKS);
        command.add("--max-examples");
        command.add(Integer.toString(Integer.getInteger("relay.fuzz.max-examples", 12)));
        command.add("--seed");
        command.add(Long.toString(Long.getLong("relay.fuzz.seed", 20261201L)));
        command.add("--request-timeout");
        command.add("20");
        command.add("--max-failures");
        command.add("50");
        if (excluded != null) {
            command.add("--exclude-operation-id");
            command.add(excluded);
        }
        Path workDir = Files.createDirectories(out.resolve(service.name()));
        Path report = out.resolve(service.name() + "-schemathesis.txt");
        ProcessBuilder builder =
                new ProcessBuilder(command)
                        .directory(workDir.toFile())
                        .redirectErrorStream(true)
                        .redirectOutput(report.toFile());
        builder.environment().putAll(tokens);
        builder.environment().put("SCHEMATHESIS_HOOKS", fuzz.resolve("problem_json.py").toString());
        builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        long started = System.nanoTime();
        Process p = builder.start();
        boolean ended = p.waitFor(ONE_RUN.toSeconds(), TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String text = Files.readString(report, StandardCharsets.UTF_8);
        System.out.printf(
                "contract fuzz of %s: %.1f s, schemathesis exit %s%n%s%n",
                service.name(),
                (System.nanoTime() - started) / 1e9,
                ended ? Integer.toString(p.exitValue()) : "none (killed after " + ONE_RUN + ")",
                summary(text));
        assertThat(ended).as(service.name() + " fuzz still running after " + ONE_RUN).isTrue();
        assertThat(p.exitValue())
                .as(
                        "schemathesis found what %s's contract does not allow (report %s):%n%s%n"
                                + "---- %s log ----%n%s",
                        service.name(), report, failures(text), service.name(), service.tail())
                .isZero();
        assertThat(text).as("schemathesis ran the service's operations").contains("passed");
    }

    /** The run's counts: the phases' lines and the closing line. */
    private static String summary(String text) {
        List<String> kept = new ArrayList<>();
        for (String line : text.lines().toList()) {
            String l = line.strip();
            if (l.startsWith("Operations:")
                    || l.contains(" passed")
                    || l.contains(" failed")
                    || l.contains(" generated")
                    || l.startsWith("=")) {
                kept.add("  " + l);
            }
        }
        return String.join("\n", kept);
    }

    /** The report from its failures (or errors) on, at most 40,000 characters. */
    private static String failures(String text) {
        int at = text.indexOf("=== ERRORS");
        int failures = text.indexOf("=== FAILURES");
        if (at < 0 || (failures >= 0 && failures < at)) {
            at = failures;
        }
        String from = at < 0 ? text : text.substring(text.lastIndexOf('\n', at) + 1);
        return from.length() > 40_000 ? from.substring(0, 40_000) + "\n[...]" : from;
    }

    /**
     * Schemathesis in the Python test venv, or a failure that says how to make it: CI's {@code
     * .ci/run} makes the venv before {@code mvn verify}.
     */
    private static Path schemathesis() {
        String venv = System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
        Path bin = Path.of(venv, "bin", "schemathesis");
        assertThat(Files.isExecutable(bin))
                .as(
                        "no schemathesis in the Python test venv %s: create it with"
                                + " python/ci-venv.sh (.ci/run does; WEIGHT_RELAY_VENV moves it)",
                        venv)
                .isTrue();
        return bin;
    }

    private ServiceProcess track(ServiceProcess process) {
        services.add(process);
        return process;
    }
}
