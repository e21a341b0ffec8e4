package io.weightrelay.control.plan;

import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.server.PlansApi;
import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.Resource;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
class PlansController implements PlansApi {

    private final PlanService plans;

    PlansController(PlanService plans) {
        this.plans = plans;
    }

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
        return binary(plans.encoded(planId));
    }

    @Override
    public ResponseEntity<Resource> getPlanSlice(String planId, String instance) {
        return binary(plans.slice(planId, instance));
    }

    private static ResponseEntity<Resource> binary(byte[] body) {
        return ResponseEntity.ok()
                .contentType(MediaType.APPLICATION_OCTET_STREAM)
                .contentLength(body.length)
                .body(new ByteArrayResource(body));
    }
}
