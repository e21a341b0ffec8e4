package io.weightrelay.control.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.InstanceLoad;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderOverview;
import io.weightrelay.api.control.model.ModelOverview;
import io.weightrelay.api.control.model.NicLoad;
import io.weightrelay.api.control.model.ParticipantState;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.PlanLoad;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.RegisteredObject;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SegmentFill;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdateOverview;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.RangeChecksums;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * The operator console: its page is public and opens nothing else, and the read-only summaries it
 * polls (models and generations, segment fill, loaders, recent update sessions with planned bytes,
 * a plan's load per NIC) answer operators only, validate their parameters and agree with what was
 * published and planned.
 */
class OperatorConsoleTest extends ControlApiTestSupport {

    private static final List<String> SUMMARIES =
            List.of(
                    "/api/v1/operator/models",
                    "/api/v1/operator/segments",
                    "/api/v1/operator/loaders",
                    "/api/v1/operator/models/m-none/updates",
                    "/api/v1/operator/plans/" + "a".repeat(64) + "/load");

    private <T> List<T> list(String path, Class<T[]> type) {
        return Arrays.asList(ok(get(path, OPERATOR), type));
    }

    /** The one element of {@code all} that {@code which} accepts. */
    private static <T> T the(List<T> all, Predicate<T> which) {
        return all.stream().filter(which).findFirst().orElseThrow();
    }

    @Test
    void theSummariesShowWhatWasPublishedWhereItIsStoredAndHowTheUpdateWent() {
        String model = newModel();
        String segment = "seg-" + model;
        ok(
                putSegment(
                        segment, TRAINER, new SegmentRegistration("t0", "127.0.0.1:1", 1L << 20)),
                SegmentOwner.class);
        long g = open(model, 1).getGeneration().getGeneration();
        List<RegisteredObject> objects = new ArrayList<>();
        long stored = 0;
        for (StoredFragment f : fragments(model, g)) {
            objects.add(object(f.getKey(), f.getBytes()).segments(List.of(segment)));
            stored += f.getBytes();
        }
        assertThat(register(model, g, objects).statusCode()).isEqualTo(200);
        assertThat(commit(model, g).statusCode()).isEqualTo(200);

        ModelOverview overview =
                the(
                        list("/api/v1/operator/models?generations=5", ModelOverview[].class),
                        m -> m.getModel().equals(model));
        assertThat(overview.getActiveGeneration()).isEqualTo(g);
        assertThat(overview.getGenerations()).hasSize(1);
        assertThat(overview.getGenerations().get(0).getGeneration().getState())
                .isEqualTo(GenerationState.ACTIVE);
        assertThat(overview.getGenerations().get(0).getGeneration().getCommittedAt()).isNotNull();
        assertThat(overview.getGenerations().get(0).getCheckpoint().getSaved()).isFalse();

        SegmentFill fill =
                the(
                        list("/api/v1/operator/segments", SegmentFill[].class),
                        s -> s.getSegment().equals(segment));
        assertThat(fill.getStoredBytes()).isEqualTo(stored);
        assertThat(fill.getObjects()).isEqualTo(objects.size());
        assertThat(fill.getSize()).isEqualTo(1L << 20);
        assertThat(fill.getHeartbeatAgeMs()).isBetween(0L, 60_000L);

        Map<String, Long> epochs = new HashMap<>();
        for (String instance : List.of(model + "-a", model + "-b")) {
            String node = instance.endsWith("a") ? "r0" : "r1";
            Loader loader = registerLoader(instance, compatLoader(model, "grp", node, 1));
            epochs.put(instance, loader.getEpoch());
        }
        List<LoaderOverview> first =
                list("/api/v1/operator/loaders?limit=1&after=" + model, LoaderOverview[].class);
        assertThat(first).extracting(LoaderOverview::getInstance).containsExactly(model + "-a");
        assertThat(first.get(0).getHeartbeatAgeMs()).isBetween(0L, 60_000L);
        assertThat(first.get(0).getWorkers()).isEqualTo(1);
        assertThat(
                        list(
                                "/api/v1/operator/loaders?limit=1&after=" + model + "-a",
                                LoaderOverview[].class))
                .extracting(LoaderOverview::getInstance)
                .containsExactly(model + "-b");

        PlanSummary plan = resolvePlan(model, g, "grp");
        UpdateSessionRequest request =
                new UpdateSessionRequest(List.of(model + "-a", model + "-b"), plan.getPlanId());
        String base = sessionPath(model, g, "grp");
        ok(call("PUT", base, LOADER, request), UpdateSession.class);
        PhaseReport prepared = new PhaseReport(model + "-a", ReportedPhase.PREPARED);
        prepared.setEpoch(epochs.get(model + "-a"));
        ok(call("POST", base + "/reports", LOADER, prepared), UpdateSession.class);
        PhaseReport failed = new PhaseReport(model + "-b", ReportedPhase.FAILED);
        failed.setEpoch(epochs.get(model + "-b"));
        failed.setFailingPeer(segment);
        failed.setError("segment " + segment + " did not answer");
        ok(call("POST", base + "/reports", LOADER, failed), UpdateSession.class);

        List<UpdateOverview> updates =
                list("/api/v1/operator/models/" + model + "/updates", UpdateOverview[].class);
        assertThat(updates).hasSize(1);
        UpdateSession session = updates.get(0).getSession();
        assertThat(session.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(session.getFailedInstance()).isEqualTo(model + "-b");
        assertThat(session.getParticipants())
                .filteredOn(p -> p.getInstance().equals(model + "-b"))
                .extracting(ParticipantState::getFailingPeer)
                .containsExactly(segment);
        assertThat(updates.get(0).getPlanned())
                .extracting(InstanceLoad::getInstance)
                .containsExactlyInAnyOrder(model + "-a", model + "-b");
        assertThat(updates.get(0).getPlanned().stream().mapToLong(InstanceLoad::getReadBytes).sum())
                .isEqualTo(plan.getStoreReadBytes());

        PlanLoad load =
                ok(
                        get("/api/v1/operator/plans/" + plan.getPlanId() + "/load", OPERATOR),
                        PlanLoad.class);
        List<NicLoad> rollout =
                load.getNics().stream()
                        .filter(n -> n.getSide() == NicLoad.SideEnum.ROLLOUT)
                        .toList();
        List<NicLoad> trainer =
                load.getNics().stream()
                        .filter(n -> n.getSide() == NicLoad.SideEnum.TRAINER)
                        .toList();
        assertThat(rollout).extracting(NicLoad::getNode).containsOnly("r0", "r1");
        assertThat(trainer).extracting(NicLoad::getNode).containsOnly("t0", "t1");
        assertThat(rollout.stream().mapToLong(NicLoad::getReadBytes).sum())
                .isEqualTo(plan.getStoreReadBytes());
        assertThat(trainer.stream().mapToLong(NicLoad::getReadBytes).sum())
                .isEqualTo(plan.getStoreReadBytes());
        assertThat(rollout.stream().mapToLong(NicLoad::getPushedBytes).sum())
                .as("every byte one node read, the other node's compat worker needs too")
                .isEqualTo(rollout.stream().mapToLong(NicLoad::getReceivedBytes).sum())
                .isEqualTo(plan.getStoreReadBytes());
    }

    /**
     * Loaders send their counts with APPLIED and zeros with the other phases: a finished session
     * still shows what each loader read, pushed and received, and is listed newest first.
     */
    @Test
    void aFinishedSessionKeepsTheCountsItsLoadersAppliedWith() {
        String model = newModel();
        long first = publish(model, 1);
        long second = publish(model, 2);
        String instance = model + "-a";
        long epoch = registerLoader(instance, compatLoader(model, "grp", "r0", 1)).getEpoch();
        for (long g : List.of(first, second)) {
            String base = sessionPath(model, g, "grp");
            String planId = resolvePlan(model, g, "grp").getPlanId();
            ok(
                    call("PUT", base, LOADER, new UpdateSessionRequest(List.of(instance), planId)),
                    UpdateSession.class);
            for (ReportedPhase phase : EVERY_PHASE) {
                PhaseReport report = new PhaseReport(instance, phase);
                report.setEpoch(epoch);
                boolean applied = phase == ReportedPhase.APPLIED;
                if (applied) {
                    // what the plan has it read, read right
                    report.setChecksums(
                            new RangeChecksums(
                                            plannedReads(planId, Crc32c.parse("crc32c:0badf00d"))
                                                    .getOrDefault(instance, List.of()))
                                    .encode());
                }
                report.setBytesRead(applied ? 1000L * g : 0L);
                report.setBytesPushed(applied ? 1500L * g : 0L);
                report.setBytesReceived(applied ? 2000L * g : 0L);
                ok(call("POST", base + "/reports", LOADER, report), UpdateSession.class);
            }
        }
        List<UpdateOverview> updates =
                list("/api/v1/operator/models/" + model + "/updates", UpdateOverview[].class);
        assertThat(updates)
                .extracting(u -> u.getSession().getGeneration())
                .containsExactly(second, first);
        for (UpdateOverview u : updates) {
            long g = u.getSession().getGeneration();
            assertThat(u.getSession().getState()).isEqualTo(SessionState.DONE);
            // Every session names its plan (a start without one is refused): its loads show.
            assertThat(u.getPlanned())
                    .as("the plan it named, its loads")
                    .extracting(InstanceLoad::getInstance)
                    .containsExactly(instance);
            ParticipantState p = u.getSession().getParticipants().get(0);
            assertThat(p.getBytesRead()).isEqualTo(1000L * g);
            assertThat(p.getBytesPushed()).isEqualTo(1500L * g);
            assertThat(p.getBytesReceived()).isEqualTo(2000L * g);
        }
        assertThat(
                        list(
                                "/api/v1/operator/models/" + model + "/updates?limit=1",
                                UpdateOverview[].class))
                .extracting(u -> u.getSession().getGeneration())
                .containsExactly(second);
    }

    @Test
    void theSummariesAnswerOperatorsOnly() {
        for (String path : SUMMARIES) {
            for (String token : List.of(LOADER, TRAINER, OWNER, METRICS, LOADER_BOUND)) {
                assertProblem(get(path, token), 403, "forbidden");
                assertThat(call("HEAD", path, token, null).statusCode()).as(path).isEqualTo(403);
            }
            assertProblem(get(path, null), 401, "unauthorized");
            assertProblem(get(path, "not-a-token"), 401, "unauthorized");
        }
    }

    @Test
    void badParametersAreProblemsNamingTheParameter() {
        for (String query :
                List.of(
                        "/api/v1/operator/models?generations=0",
                        "/api/v1/operator/models?generations=101",
                        "/api/v1/operator/models?generations=ten",
                        "/api/v1/operator/loaders?limit=0",
                        "/api/v1/operator/loaders?after=" + "x".repeat(129),
                        "/api/v1/operator/models/m-x/updates?limit=1000",
                        "/api/v1/operator/models/bad%20model/updates",
                        "/api/v1/operator/plans/not-a-digest/load")) {
            HttpResponse<String> r = get(query, OPERATOR);
            assertProblem(r, 400, "invalid-request");
        }
        assertProblem(
                get("/api/v1/operator/models/" + newModel() + "/updates", OPERATOR),
                404,
                "model-not-found");
        assertProblem(
                get("/api/v1/operator/plans/" + "b".repeat(64) + "/load", OPERATOR),
                404,
                "plan-not-found");
    }

    @Test
    void theConsolePageIsPublicAndOpensNothingElse() {
        HttpResponse<String> redirect = get("/console", null);
        assertThat(redirect.statusCode()).isEqualTo(302);
        assertThat(redirect.headers().firstValue("Location"))
                .hasValueSatisfying(l -> assertThat(l).endsWith("/console/"));
        HttpResponse<String> page = get("/console/", null);
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.headers().firstValue("Content-Type"))
                .hasValueSatisfying(ct -> assertThat(ct).startsWith("text/html"));
        assertThat(page.body()).contains("Operator token").contains("console.js");
        assertThat(page.headers().firstValue("Content-Security-Policy"))
                .as("the page loads and calls this origin only and submits no form")
                .hasValueSatisfying(
                        csp ->
                                assertThat(csp)
                                        .contains("default-src 'self'")
                                        .contains("form-action 'none'")
                                        .doesNotContain("unsafe-inline"));
        assertThat(page.body())
                .as("no inline script: the policy would refuse it")
                .doesNotContain("<script>")
                .contains("<script src=\"console.js\"");
        for (String asset :
                List.of("/console/console.js", "/console/console.css", "/console/favicon.svg")) {
            assertThat(get(asset, null).statusCode()).as(asset).isEqualTo(200);
        }
        assertThat(get("/console/console.js", null).body())
                .as("data reaches the page as text only")
                .doesNotContain("innerHTML")
                .doesNotContain("outerHTML")
                .doesNotContain("insertAdjacentHTML")
                .doesNotContain("document.write");
        assertProblem(get("/console/no-such-file.js", null), 404, "not-found");
        // Paths the container resolves elsewhere are not public because they start with the
        // console's prefix.
        for (String sneaky :
                List.of(
                        "/console/../api/v1/operator/segments",
                        "/console/./../api/v1/operator/segments",
                        "/console/%2e%2e/api/v1/operator/segments",
                        "/console/;x=1/../api/v1/operator/segments",
                        "/console;/../api/v1/operator/segments")) {
            HttpResponse<String> r = get(sneaky, null);
            assertThat(r.statusCode()).as(sneaky + ": " + r.body()).isIn(400, 401, 404);
            assertThat(r.body()).as(sneaky).doesNotContain("storedBytes");
        }
    }
}
