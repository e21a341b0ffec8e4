package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Demands;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.util.FileSystemUtils;
import org.springframework.web.client.RestClientResponseException;

/**
 * The whole system as deployed, on loopback: control-api, two publishers (two trainer node labels)
 * and four loaders (two rollout node labels, two instances each, tp 2) as separate JVMs from their
 * executable jars, the simulated trainer publishing and the simulated engines updating over REST
 * and shared memory. Needs the services' {@code -exec} jars, which the reactor builds before this
 * module.
 *
 * <p>Per mode, both tests need that one lab, so they take turns on it ({@link SharedTestLab}): one
 * lab start per mode instead of one per test, each start being seven JVMs, most of a test's time on
 * two cores. Issue 51's serving through the fetch ({@link ServingThroughFetch}) goes first, on the
 * fresh lab, and leaves it usable (its last update verifies every byte); the end-to-end story goes
 * last, because it kills a publisher and stops the lab to check what the services leave behind.
 * Each test publishes trainer steps nobody published on the lab yet. A test that fails stops the
 * lab (its services' logs printed), so the next one starts a fresh lab and proves its own story.
 */
@ParameterizedClass
@EnumSource(Mode.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LabEndToEndTest {

    @RegisterExtension static final SharedTestLab shared = new SharedTestLab();

    @Parameter Mode mode;

    @AfterAll
    static void stopLab() {
        shared.close();
    }

    private LabCluster lab() throws Exception {
        return shared.lab(LabCluster.Spec.of("tiny", 4, 2, mode));
    }

    /** Issue 51 (see {@link ServingThroughFetch}): first, on the fresh lab. */
    @Test
    @Order(1)
    void enginesServeThroughTheFetchAndPauseOnlyToInstall() throws Exception {
        ServingThroughFetch.enginesServeThroughTheFetchAndPauseOnlyToInstall(
                lab(), mode, shared::nextStep);
    }

    /** Last: it kills a publisher and ends by stopping the lab. */
    @Test
    @Order(2)
    void publishUpdateAndRestartWithoutRepublish() throws Exception {
        LabCluster lab = lab();
        if (mode == Mode.DIRECT) {
            // the serving test before registers the engines staged; this story is in place
            lab.directInstall(DirectInstall.IN_PLACE);
        }
        long first = lab.publish(shared.nextStep());
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(first)).isPositive();

        long second = lab.publish(shared.nextStep());
        assertThat(second).isGreaterThan(first);
        LabUpdate update = lab.updateAll().requireUpdated();
        long verified = lab.verifyAll(second);
        Demands demands = Demands.of(lab.manifest(), lab.placement());
        assertThat(verified).as("bytes checked against the trainer's").isPositive();
        Delivery.exactAndSinglePull(update, demands);
        if (mode == Mode.COMPAT) {
            ConsoleInChromium.showsTheLab(lab, second, "lab");
        }

        RolloutEngine restarted = lab.restartInstance(0);
        lab.update(List.of(restarted)).requireUpdated();
        assertThat(lab.verify(restarted, second))
                .as("a restarted instance loads the active generation with no republish")
                .isPositive();

        refusedRegistrationReachesTheEngine(lab, lab.engines().get(1));
        checkpointReachesEveryOwnerWithTheOwnerCredential(lab, second);
        if (mode == Mode.COMPAT) {
            publisherRestartNeverServesLostBytes(lab, second, shared::nextStep);
            everyMetricTheDashboardShowsIsScraped(lab);
        } else {
            deadOwnerFailsThePrepare(lab, second, shared.nextStep());
        }
        noTokenOrSecretInAnyLog(lab);
        servicesKeepTheirTemporaryFilesToThemselves(lab, shared::close);
    }

    /**
     * Each service's {@code java.io.tmpdir} is its own directory beside its log, where embedded
     * Tomcat puts the base directory it never removes; closing the lab ({@code stop}) removes them
     * all, killed services' included, so no run leaves {@code tomcat.*} directories behind in
     * {@code /tmp}.
     */
    private static void servicesKeepTheirTemporaryFilesToThemselves(LabCluster lab, Runnable stop)
            throws IOException {
        try (var files = Files.list(lab.logs().resolve("control-api.tmp"))) {
            assertThat(files.map(f -> f.getFileName().toString()))
                    .anyMatch(name -> name.startsWith("tomcat"));
        }
        stop.run();
        try (var files = Files.list(lab.logs())) {
            assertThat(files.map(f -> f.getFileName().toString()))
                    .noneMatch(name -> name.endsWith(".tmp"));
        }
    }

    /**
     * Each publisher registered its admin URL with its own owner token (bound to its segment), so
     * control-api reaches every owner holding the generation, with its owner credential.
     */
    private static void checkpointReachesEveryOwnerWithTheOwnerCredential(
            LabCluster lab, long generation) throws IOException {
        Path dir = Files.createTempDirectory("wr-lab-h9-ckpt");
        try {
            CheckpointReport report = lab.checkpoint(generation, dir);
            assertThat(report.getOwners()).hasSize(2);
            assertThat(report.getOwners())
                    .allSatisfy(o -> assertThat(o.getError()).as(o.getSegment()).isNull());
        } finally {
            FileSystemUtils.deleteRecursively(dir);
        }
    }

    /**
     * Every service answers a scrape with the lab's metrics token (and refuses that token
     * elsewhere), and every {@code relay_*} series the provisioned Grafana dashboard queries is in
     * what the services expose after this run (publish, updates, a lost generation), so the
     * dashboard and the code cannot drift apart.
     */
    private static void everyMetricTheDashboardShowsIsScraped(LabCluster lab) throws Exception {
        String dashboard =
                Files.readString(
                        Path.of(
                                "..",
                                "docker",
                                "monitoring",
                                "grafana",
                                "dashboards",
                                "weight-relay.json"));
        Set<String> queried = new TreeSet<>();
        Matcher m = Pattern.compile("relay_[a-z_]+").matcher(dashboard);
        while (m.find()) {
            queried.add(m.group());
        }
        assertThat(queried).hasSizeGreaterThan(8);
        Set<String> scraped = new TreeSet<>();
        HttpClient http = HttpClient.newHttpClient();
        for (Map.Entry<String, String> service : lab.serviceUrls().entrySet()) {
            HttpResponse<String> scrape =
                    get(http, service.getValue() + "/actuator/prometheus", lab.metricsToken());
            assertThat(scrape.statusCode()).as(service.getKey()).isEqualTo(200);
            scrape.body()
                    .lines()
                    .filter(l -> !l.startsWith("#") && !l.isBlank())
                    .map(l -> l.split("[{ ]", 2)[0])
                    .forEach(scraped::add);
            HttpResponse<String> elsewhere =
                    get(http, service.getValue() + "/actuator/metrics", lab.metricsToken());
            assertThat(elsewhere.statusCode()).as(service.getKey()).isEqualTo(403);
        }
        assertThat(scraped).as("what the services expose").containsAll(queried);
    }

    /**
     * No configured token, bound token or data-plane secret appears in any service log of the run
     * (the services got them in files, not on their command lines).
     */
    private static void noTokenOrSecretInAnyLog(LabCluster lab) throws IOException {
        List<String> secrets = lab.configuredSecrets();
        assertThat(secrets).hasSizeGreaterThanOrEqualTo(5 + 4 + 2).doesNotHaveDuplicates();
        List<Path> logs;
        try (var files = Files.list(lab.logs())) {
            logs = files.filter(f -> f.toString().endsWith(".log")).toList();
        }
        assertThat(logs).as("control-api, two publishers, four loaders").hasSizeGreaterThan(6);
        for (Path log : logs) {
            String text = Files.readString(log);
            assertThat(text).as(log.toString()).isNotEmpty();
            for (String secret : secrets) {
                assertThat(text.contains(secret))
                        .as("%s holds a configured secret (%s...)", log, secret.substring(0, 9))
                        .isFalse();
            }
        }
    }

    /**
     * A publisher killed after a commit and restarted on its segment lost what it stored: the
     * generation committed just before is marked LOST by control-api (told by the new owner), every
     * engine stays on the generation it serves, byte for byte, and the restarted publisher's next
     * generation reaches the same loaders (they lived through the restart and find its new
     * endpoint) and verifies byte for byte.
     */
    private static void publisherRestartNeverServesLostBytes(
            LabCluster lab, long serving, LongSupplier steps) throws Exception {
        long lost = lab.publish(steps.getAsLong());
        lab.faults().restartPublisher(0);
        assertThat(lab.awaitGenerationState(lost, GenerationState.LOST, Duration.ofSeconds(60)))
                .as("generation %d after its owner restarted", lost)
                .isEqualTo(GenerationState.LOST);

        LabUpdate refused = lab.updateAll();
        for (UpdateProgress p : refused.results()) {
            assertThat(p.getOutcome())
                    .as("%s: %s", p.getUpdateId(), p.getError())
                    .isEqualTo(UpdateOutcome.RESUMED_OLD);
            assertThat(p.getError()).as(p.getUpdateId()).contains("LOST");
        }
        assertThat(lab.verifyAll(serving))
                .as("engines still serve generation %d after %d became unreadable", serving, lost)
                .isPositive();

        long next = lab.publish(steps.getAsLong());
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(next))
                .as("the restarted publisher's generation %d, through loaders that lived on", next)
                .isPositive();
    }

    /**
     * A segment owner killed after a commit and not restarted: every loader's prepare finds its
     * owner gone and names the segment, so no instance starts an apply it cannot finish; all stay
     * on the generation they serve, byte for byte, and resume (RESUMED_OLD, not paused).
     */
    private static void deadOwnerFailsThePrepare(LabCluster lab, long serving, long step)
            throws Exception {
        lab.publish(step);
        String segment = lab.faults().killPublisher(1);
        LabUpdate refused = lab.updateAll();
        for (UpdateProgress p : refused.results()) {
            assertThat(p.getOutcome())
                    .as("%s: %s", p.getUpdateId(), p.getError())
                    .isEqualTo(UpdateOutcome.RESUMED_OLD);
        }
        // a loader that reads nothing from it fails at the all-prepared barrier, naming a peer
        assertThat(refused.results())
                .extracting(UpdateProgress::getFailingPeer)
                .as("the dead owner's segment is named")
                .contains(segment);
        assertThat(lab.verifyAll(serving))
                .as("engines still serve generation %d", serving)
                .isPositive();
    }

    /**
     * A wrong registration is refused with 400 and the problem's own type, not a retryable 503, and
     * leaves the instance as it was: a placement box whose strides have another rank than its shape
     * (direct workers) is refused by control-api and its problem reaches the engine through the
     * loader; a buffer id registered twice (compat workers have no boxes) by the loader itself.
     */
    private static void refusedRegistrationReachesTheEngine(LabCluster lab, RolloutEngine engine) {
        List<WorkerPlacement> workers =
                RolloutEngine.workers(lab.placement(), engine.instance(), lab.manifest());
        WorkerPlacement first = workers.get(0);
        String expected;
        if (first.getFragments() != null && !first.getFragments().isEmpty()) {
            TargetFragment f = first.getFragments().get(0);
            List<Long> strides = new ArrayList<>(f.getStrides());
            strides.add(0, strides.get(0));
            f.setStrides(strides);
            expected = "placement-rank-mismatch";
        } else {
            first.addBuffersItem(first.getBuffers().get(0));
            expected = "invalid-registration";
        }
        InstanceStatus before = engine.status();
        assertThatThrownBy(
                        () ->
                                engine.register(
                                        lab.manifest().model(), "lab", first.getNode(), workers))
                .isInstanceOfSatisfying(
                        RestClientResponseException.class,
                        e -> {
                            assertThat(e.getStatusCode().value()).isEqualTo(400);
                            assertThat(e.getResponseBodyAsString())
                                    .contains("/problems/" + expected)
                                    .contains(first.getWorkerId());
                        });
        assertThat(engine.status().getEpoch()).isEqualTo(before.getEpoch());
    }

    /** {@code GET url} with {@code token} as its bearer token. */
    private static HttpResponse<String> get(HttpClient http, String url, String token)
            throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create(url))
                        .header("Authorization", "Bearer " + token)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
