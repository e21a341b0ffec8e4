package io.weightrelay.control.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.InstanceSpan;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdatePhase;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.control.ControlApiTestSupport;
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

    private HttpResponse<String> start(
            String model, long generation, String group, String... loaders) {
        UpdateSessionRequest request = new UpdateSessionRequest(List.of(loaders));
        request.setPhaseTimeoutSeconds(60);
        return call("PUT", sessionPath(model, generation, group), LOADER, request);
    }

    private UpdateSession report(
            String model, long generation, String group, String loader, ReportedPhase phase) {
        PhaseReport report = new PhaseReport(loader, phase);
        report.setEpoch(epochs.get(loader));
        if (phase == ReportedPhase.FAILED) {
            report.setError("write to a peer's receive segment failed");
        }
        return ok(
                call("POST", sessionPath(model, generation, group) + "/reports", LOADER, report),
                UpdateSession.class);
    }

    @Test
    void theLoadersOfAnInstanceAgreeOnItsNodesAndServeOneNodeEach() throws Exception {
        String model = newModel();
        String x = model + "-x";
        Loader first = registered(x + "-n0", spanLoader(model, "grp", "n0", x, 2));
        assertThat(first.getSpan()).isEqualTo(new InstanceSpan(x, 2));
        registered(x + "-n1", spanLoader(model, "grp", "n1", x, 2));
        // a loader registering again keeps its place
        registered(x + "-n1", spanLoader(model, "grp", "n1", x, 2));

        HttpResponse<String> sameNode = register(x + "-n0b", spanLoader(model, "grp", "n0", x, 2));
        assertProblem(sameNode, 409, "rollout-instance-conflict");
        JsonNode problem = json.readTree(sameNode.body());
        assertThat(problem.get("rolloutInstance").asString()).isEqualTo(x);
        assertThat(problem.get("node").asString()).isEqualTo("n0");
        assertThat(problem.get("loader").asString()).isEqualTo(x + "-n0");

        HttpResponse<String> otherCount = register(x + "-n2", spanLoader(model, "grp", "n2", x, 3));
        assertProblem(otherCount, 409, "rollout-instance-conflict");
        assertThat(otherCount.body()).contains("spans 3 nodes").contains("spanning 2");

        HttpResponse<String> tooMany = register(x + "-n2", spanLoader(model, "grp", "n2", x, 2));
        assertProblem(tooMany, 409, "rollout-instance-conflict");
        assertThat(json.readTree(tooMany.body()).get("loaders").toString())
                .contains(x + "-n0", x + "-n1", x + "-n2");

        // a span names its instance and a node count of at least 1
        String body = json.writeValueAsString(spanLoader(model, "grp", "n5", x + "-bad", 2));
        assertProblem(
                putLoader(x + "-n5", body.replace("\"nodes\":2", "\"nodes\":0")),
                400,
                "invalid-request");
        assertProblem(
                putLoader(x + "-n5", body.replace(",\"nodes\":2", "").replace("\"nodes\":2,", "")),
                400,
                "invalid-request");

        // each loader registers only the ranks of its own node
        LoaderRegistration elsewhere = spanLoader(model, "grp", "n3", x + "-other", 2);
        elsewhere.getWorkers().get(1).setNode("n4");
        HttpResponse<String> wrongNode = register(x + "-n3", elsewhere);
        assertProblem(wrongNode, 400, "invalid-placement");
        assertThat(wrongNode.body()).contains("n4").contains(x + "-other");
    }

    @Test
    void aSessionHoldingPartOfAnInstanceIsRefusedAndNoneIsCreated() throws Exception {
        String model = newModel();
        long g = publish(model, 1);
        String x = model + "-x";
        registered(x + "-n0", spanLoader(model, "grp", "n0", x, 2));
        registered(x + "-n1", spanLoader(model, "grp", "n1", x, 2));
        registered(model + "-solo", compatLoader(model, "grp", "n2", 1));

        HttpResponse<String> half = start(model, g, "grp", model + "-solo", x + "-n0");
        assertProblem(half, 409, "rollout-instance-incomplete");
        JsonNode problem = json.readTree(half.body());
        assertThat(problem.get("rolloutInstance").asString()).isEqualTo(x);
        assertThat(problem.get("nodes").asInt()).isEqualTo(2);
        assertThat(problem.get("reason").asString()).isEqualTo("missing");
        assertThat(problem.get("loaders").toString()).contains(x + "-n0");
        assertThat(problem.get("detail").asString()).contains("spans 2 nodes");
        assertThat(get(sessionPath(model, g, "grp"), LOADER).statusCode()).isEqualTo(404);

        // the whole instance starts
        UpdateSession whole =
                ok(
                        start(model, g, "grp", model + "-solo", x + "-n0", x + "-n1"),
                        UpdateSession.class);
        assertThat(whole.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(whole.getParticipants()).hasSize(3);
    }

    @Test
    void anInstanceAdvancesOnlyWhenAllItsLoadersApplied() {
        String model = newModel();
        long g = publish(model, 1);
        String x = model + "-x";
        String solo = model + "-solo";
        registered(x + "-n0", spanLoader(model, "grp", "n0", x, 2));
        registered(x + "-n1", spanLoader(model, "grp", "n1", x, 2));
        registered(solo, compatLoader(model, "grp", "n2", 1));
        List<String> all = List.of(solo, x + "-n0", x + "-n1");
        ok(start(model, g, "grp", all.toArray(String[]::new)), UpdateSession.class);
        for (String loader : all) {
            report(model, g, "grp", loader, ReportedPhase.PREPARED);
        }
        report(model, g, "grp", solo, ReportedPhase.APPLIED);
        UpdateSession half = report(model, g, "grp", x + "-n0", ReportedPhase.APPLIED);
        assertThat(half.getState())
                .as("one loader of the instance has not applied: nobody may post-apply")
                .isEqualTo(SessionState.APPLYING);
        UpdateSession post = report(model, g, "grp", x + "-n1", ReportedPhase.APPLIED);
        assertThat(post.getState()).isEqualTo(SessionState.POST_APPLYING);
        for (String loader : all) {
            report(model, g, "grp", loader, ReportedPhase.POST_APPLIED);
        }
        UpdateSession done = ok(get(sessionPath(model, g, "grp"), LOADER), UpdateSession.class);
        assertThat(done.getState()).isEqualTo(SessionState.DONE);
        assertThat(done.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.DONE));
    }

    /**
     * Rollout instance {@code <model>-x}, one loader on each of two nodes, in a started session.
     */
    private String startedOnTwoNodes(String model, long g) {
        String x = model + "-x";
        registered(x + "-n0", spanLoader(model, "grp", "n0", x, 2));
        registered(x + "-n1", spanLoader(model, "grp", "n1", x, 2));
        ok(start(model, g, "grp", x + "-n0", x + "-n1"), UpdateSession.class);
        return x;
    }

    @Test
    void oneLoaderFailingAfterItsPeerAppliedKeepsTheWholeInstanceOnItsGeneration() {
        String model = newModel();
        long g = publish(model, 1);
        String x = startedOnTwoNodes(model, g);
        report(model, g, "grp", x + "-n0", ReportedPhase.PREPARED);
        report(model, g, "grp", x + "-n1", ReportedPhase.PREPARED);
        report(model, g, "grp", x + "-n0", ReportedPhase.APPLIED);
        UpdateSession failed = report(model, g, "grp", x + "-n1", ReportedPhase.FAILED);
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
        String model = newModel();
        long g = publish(model, 1);
        String x = startedOnTwoNodes(model, g);
        report(model, g, "grp", x + "-n0", ReportedPhase.PREPARED);
        UpdateSession failed = report(model, g, "grp", x + "-n1", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(failed.getFailedInstance()).isEqualTo(x + "-n1");
    }
}
