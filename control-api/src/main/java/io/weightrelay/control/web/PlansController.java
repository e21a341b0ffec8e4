package io.weightrelay.control.web;

import io.weightrelay.api.control.model.*;
import io.weightrelay.api.control.server.PlansApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 5 implements them. */
@RestController
class PlansController implements PlansApi {

    @Override
    public ResponseEntity<org.springframework.core.io.Resource> getPlanEncoded(String planId) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getPlanEncoded lands with issue 5");
    }

    @Override
    public ResponseEntity<org.springframework.core.io.Resource> getPlanSlice(
            String planId, String instance) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getPlanSlice lands with issue 5");
    }

    @Override
    public ResponseEntity<PlanSummary> getPlanSummary(String planId) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getPlanSummary lands with issue 5");
    }

    @Override
    public ResponseEntity<PlanSummary> resolvePlan(PlanRequest planRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("resolvePlan lands with issue 5");
    }
}
