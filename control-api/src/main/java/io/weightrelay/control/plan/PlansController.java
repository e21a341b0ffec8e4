package io.weightrelay.control.plan;

import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.server.PlansApi;
import io.weightrelay.control.web.EncodedBodies;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.core.io.Resource;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/**
 * @param request the current request (a proxy Spring resolves per call): a slice goes out
 *     gzip-compressed when it accepts that
 */
@RestController
record PlansController(PlanService plans, HttpServletRequest request) implements PlansApi {

    @Override
    public ResponseEntity<PlanSummary> resolvePlan(PlanRequest request) {
        return ResponseEntity.ok(plans.resolve(request));
    }

    @Override
    public ResponseEntity<PlanSummary> getPlanSummary(String planId) {
        return ResponseEntity.ok(plans.summary(planId));
    }

    @Override
    public ResponseEntity<Resource> getPlanEncoded(String planId) {
        return EncodedBodies.binary(plans.encoded(planId));
    }

    /** The slice as stored, gzip-compressed, to a caller that accepts gzip; else inflated. */
    @Override
    public ResponseEntity<Resource> getPlanSlice(String planId, String instance) {
        return EncodedBodies.negotiated(
                request,
                () -> plans.gzippedSlice(planId, instance),
                () -> plans.slice(planId, instance));
    }
}
