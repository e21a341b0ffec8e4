package io.weightrelay.control.web;

import io.weightrelay.api.control.model.*;
import io.weightrelay.api.control.server.AssignmentsApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 5 implements them. */
@RestController
class AssignmentsController implements AssignmentsApi {

    @Override
    public ResponseEntity<PublisherAssignment> computeAssignment(
            AssignmentRequest assignmentRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("computeAssignment lands with issue 5");
    }
}
