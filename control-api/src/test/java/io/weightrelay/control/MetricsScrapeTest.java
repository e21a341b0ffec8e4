package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.SegmentRegistration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What a Prometheus server with the metrics token sees of control-api after a publish, a plan asked
 * twice and a live owner and loader: every meter docs/metrics.md lists for control-api, with the
 * labels it documents, and a heartbeat age per live owner and loader.
 */
class MetricsScrapeTest extends ControlApiTestSupport {

    @Test
    void aScrapeShowsPublishPlanCacheAndHeartbeatAges() throws Exception {
        String model = newModel();
        long generation = publish(model, 1);
        String instance = "metrics-" + model;
        String segment = "seg-" + model;
        assertThat(putLoader(instance, compatLoader(model, "grp", "r0-" + model, 1)).statusCode())
                .isEqualTo(200);
        PlanRequest plan = new PlanRequest(model, generation, "grp");
        assertThat(call("POST", "/api/v1/plans", LOADER, plan).statusCode()).isEqualTo(200);
        assertThat(call("POST", "/api/v1/plans", LOADER, plan).statusCode()).isEqualTo(200);

        String scrape = "";
        long deadline = System.nanoTime() + 15_000_000_000L;
        while (System.nanoTime() < deadline) {
            // The test context's segment TTL is 2 s: keep the owner alive while waiting.
            assertThat(
                            putSegment(
                                            segment,
                                            OWNER,
                                            new SegmentRegistration(
                                                    "t0", "127.0.0.1:7001", 1L << 30))
                                    .statusCode())
                    .isEqualTo(200);
            scrape = get("/actuator/prometheus", METRICS).body();
            if (scrape.contains("id=\"" + segment + "\"") && scrape.contains(instance)) {
                break;
            }
            Thread.sleep(200);
        }
        String m = "model=\"" + model + "\"";
        assertThat(scrape)
                .contains("relay_generations_committed_total{" + m)
                .contains("relay_generations_published_bytes_count{" + m)
                .contains("relay_generations_publish_seconds_count{" + m)
                .contains("relay_plans_cache_total{result=\"hit\"")
                .contains("relay_plans_cache_total{result=\"miss\"")
                .contains("relay_plans_compute_seconds_count")
                .contains("relay_registry_live{kind=\"owner\"")
                .contains("relay_registry_live{kind=\"loader\"");
        assertThat(sample(scrape, "relay_generations_published_bytes_sum{" + m))
                .as("the bytes of the one committed generation")
                .isEqualTo(
                        (double)
                                ok(
                                                get(
                                                        "/api/v1/models/"
                                                                + model
                                                                + "/generations/"
                                                                + generation,
                                                        OPERATOR),
                                                Generation.class)
                                        .getBytesExpected());
        assertThat(scrape)
                .contains(
                        "relay_registry_heartbeat_age_seconds{id=\""
                                + instance
                                + "\",kind=\"loader\"");
        double ownerAge =
                sample(
                        scrape,
                        "relay_registry_heartbeat_age_seconds{id=\""
                                + segment
                                + "\",kind=\"owner\"");
        assertThat(ownerAge).as("seconds since the owner's last heartbeat").isBetween(0.0, 3.0);
    }

    /** The value of the first sample whose name and labels start with {@code prefix}. */
    private static double sample(String scrape, String prefix) {
        Matcher m = Pattern.compile(Pattern.quote(prefix) + "[^}]*} (\\S+)").matcher(scrape);
        assertThat(m.find()).as("a sample " + prefix + " in\n" + scrape).isTrue();
        return Double.parseDouble(m.group(1));
    }
}
