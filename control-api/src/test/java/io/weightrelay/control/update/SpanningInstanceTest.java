package io.weightrelay.control.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.InstanceSpan;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.RangeChecksums;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * A rollout instance that spans nodes has one loader on each of its nodes: the registry keeps the
 * loaders of an instance consistent, and an update session holds every one of them or none, so the
 * instance advances only when all its loaders applied, and a failure of one keeps the whole
 * instance on its generation.
 */
class SpanningInstanceTest extends ControlApiTestSupport {

    /** The group every session of these tests is of. */
    private static final String GROUP = "grp";

    /** The model of this test: a new one per test. */
    private final String model = newModel();

    /** The rollout instance that spans nodes: {@code <model>-x}. */
    private final String x = model + "-x";

    private final Map<String, Long> epochs = new HashMap<>();

    private static LoaderRegistration spanLoader(
            String model, String group, String node, String instance, int nodes) {
        LoaderRegistration r = compatLoader(model, group, node, 2);
        r.setSpan(new InstanceSpan(instance, nodes));
        return r;
    }

    private HttpResponse<String> register(String loader, LoaderRegistration r) {
        return putLoader(loader, r);
    }

    private Loader registered(String loader, LoaderRegistration r) {
        Loader l = ok(register(loader, r), Loader.class);
        epochs.put(loader, l.getEpoch());
        return l;
    }

    /** The session of {@link #GROUP} for {@code generation}. */
    private String session(long generation) {
        return sessionPath(model, generation, GROUP);
    }

    /** The plan each generation's session was started on. */
    private final Map<Long, String> planIds = new HashMap<>();

    private HttpResponse<String> start(long generation, String... loaders) {
        planIds.put(generation, resolvePlan(model, generation, GROUP).getPlanId());
        UpdateSessionRequest request =
                new UpdateSessionRequest(List.of(loaders), planIds.get(generation));
        request.setPhaseTimeoutSeconds(60);
        return call("PUT", session(generation), LOADER, request);
    }

    private UpdateSession report(long generation, String loader, ReportedPhase phase) {
        PhaseReport report = new PhaseReport(loader, phase);
        report.setEpoch(epochs.get(loader));
        if (phase == ReportedPhase.APPLIED) {
            // what it read by the plan, read right
            report.setChecksums(
                    new RangeChecksums(
                                    plannedReads(
                                                    planIds.get(generation),
                                                    Crc32c.parse("crc32c:0badf00d"))
                                            .getOrDefault(loader, List.of()))
                            .encode());
        }
        if (phase == ReportedPhase.FAILED) {
            report.setError("write to a peer's receive segment failed");
        }
        return ok(
                call("POST", session(generation) + "/reports", LOADER, report),
                UpdateSession.class);
    }

    @Test
    void theLoadersOfAnInstanceAgreeOnItsNodesAndServeOneNodeEach() throws Exception {
        Loader first = registered(x + "-n0", spanLoader(model, GROUP, "n0", x, 2));
        assertThat(first.getSpan()).isEqualTo(new InstanceSpan(x, 2));
        registered(x + "-n1", spanLoader(model, GROUP, "n1", x, 2));
        // a loader registering again keeps its place
        registered(x + "-n1", spanLoader(model, GROUP, "n1", x, 2));

        HttpResponse<String> sameNode = register(x + "-n0b", spanLoader(model, GROUP, "n0", x, 2));
        assertProblem(sameNode, 409, "rollout-instance-conflict");
        JsonNode problem = json.readTree(sameNode.body());
        assertThat(problem.get("rolloutInstance").asString()).isEqualTo(x);
        assertThat(problem.get("node").asString()).isEqualTo("n0");
        assertThat(problem.get("loader").asString()).isEqualTo(x + "-n0");

        HttpResponse<String> otherCount = register(x + "-n2", spanLoader(model, GROUP, "n2", x, 3));
        assertProblem(otherCount, 409, "rollout-instance-conflict");
        assertThat(otherCount.body()).contains("spans 3 nodes").contains("spanning 2");

        HttpResponse<String> tooMany = register(x + "-n2", spanLoader(model, GROUP, "n2", x, 2));
        assertProblem(tooMany, 409, "rollout-instance-conflict");
        assertThat(json.readTree(tooMany.body()).get("loaders").toString())
                .contains(x + "-n0", x + "-n1", x + "-n2");

        // a span names its instance and a node count of at least 1
        String body = json.writeValueAsString(spanLoader(model, GROUP, "n5", x + "-bad", 2));
        assertProblem(
                putLoader(x + "-n5", body.replace("\"nodes\":2", "\"nodes\":0")),
                400,
                "invalid-request");
        assertProblem(
                putLoader(x + "-n5", body.replace(",\"nodes\":2", "").replace("\"nodes\":2,", "")),
                400,
                "invalid-request");

        // each loader registers only the ranks of its own node
        LoaderRegistration elsewhere = spanLoader(model, GROUP, "n3", x + "-other", 2);
        elsewhere.getWorkers().get(1).setNode("n4");
        HttpResponse<String> wrongNode = register(x + "-n3", elsewhere);
        assertProblem(wrongNode, 400, "invalid-placement");
        assertThat(wrongNode.body()).contains("n4").contains(x + "-other");
    }

    @Test
    void aSessionHoldingPartOfAnInstanceIsRefusedAndNoneIsCreated() throws Exception {
        long g = publish(model, 1);
        registered(x + "-n0", spanLoader(model, GROUP, "n0", x, 2));
        registered(x + "-n1", spanLoader(model, GROUP, "n1", x, 2));
        registered(model + "-solo", compatLoader(model, GROUP, "n2", 1));

        HttpResponse<String> half = start(g, model + "-solo", x + "-n0");
        assertProblem(half, 409, "rollout-instance-incomplete");
        JsonNode problem = json.readTree(half.body());
        assertThat(problem.get("rolloutInstance").asString()).isEqualTo(x);
        assertThat(problem.get("nodes").asInt()).isEqualTo(2);
        assertThat(problem.get("reason").asString()).isEqualTo("missing");
        assertThat(problem.get("loaders").toString()).contains(x + "-n0");
        assertThat(problem.get("detail").asString()).contains("spans 2 nodes");
        assertThat(get(session(g), LOADER).statusCode()).isEqualTo(404);

        // the whole instance starts
        UpdateSession whole =
                ok(start(g, model + "-solo", x + "-n0", x + "-n1"), UpdateSession.class);
        assertThat(whole.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(whole.getParticipants()).hasSize(3);
    }

    @Test
    void anInstanceAdvancesOnlyWhenAllItsLoadersApplied() {
        long g = publish(model, 1);
        String solo = model + "-solo";
        registered(x + "-n0", spanLoader(model, GROUP, "n0", x, 2));
        registered(x + "-n1", spanLoader(model, GROUP, "n1", x, 2));
        registered(solo, compatLoader(model, GROUP, "n2", 1));
        List<String> all = List.of(solo, x + "-n0", x + "-n1");
        ok(start(g, all.toArray(String[]::new)), UpdateSession.class);
        for (String loader : all) {
            report(g, loader, ReportedPhase.PREPARED);
        }
        report(g, solo, ReportedPhase.APPLIED);
        UpdateSession half = report(g, x + "-n0", ReportedPhase.APPLIED);
        assertThat(half.getState())
                .as("one loader of the instance has not applied: nobody may post-apply")
                .isEqualTo(SessionState.APPLYING);
        UpdateSession post = report(g, x + "-n1", ReportedPhase.APPLIED);
        assertThat(post.getState()).isEqualTo(SessionState.POST_APPLYING);
        for (String loader : all) {
            report(g, loader, ReportedPhase.POST_APPLIED);
        }
        UpdateSession done = ok(get(session(g), LOADER), UpdateSession.class);
        assertThat(done.getState()).isEqualTo(SessionState.DONE);
        assertThat(done.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.DONE));
    }

    /**
     * Publishes generation 1 and starts its session with the rollout instance, one loader on each
     * of two nodes; returns the generation.
     */
    private long publishedAndStartedOnTwoNodes() {
        long g = publish(model, 1);
        registered(x + "-n0", spanLoader(model, GROUP, "n0", x, 2));
        registered(x + "-n1", spanLoader(model, GROUP, "n1", x, 2));
        ok(start(g, x + "-n0", x + "-n1"), UpdateSession.class);
        return g;
    }

    @Test
    void oneLoaderFailingAfterItsPeerAppliedKeepsTheWholeInstanceOnItsGeneration() {
        long g = publishedAndStartedOnTwoNodes();
        report(g, x + "-n0", ReportedPhase.PREPARED);
        report(g, x + "-n1", ReportedPhase.PREPARED);
        report(g, x + "-n0", ReportedPhase.APPLIED);
        UpdateSession failed = report(g, x + "-n1", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo(x + "-n1");
        assertThat(failed.getParticipants())
                .noneSatisfy(
                        p ->
                                assertThat(p.getPhase())
                                        .isIn(UpdatePhase.POST_APPLYING, UpdatePhase.DONE));
    }

    @Test
    void oneLoaderFailingBeforeApplyResumesTheWholeInstanceOnItsGeneration() {
        long g = publishedAndStartedOnTwoNodes();
        report(g, x + "-n0", ReportedPhase.PREPARED);
        UpdateSession failed = report(g, x + "-n1", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(failed.getFailedInstance()).isEqualTo(x + "-n1");
    }
}
