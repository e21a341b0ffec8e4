package io.weightrelay.publisher.web;

import io.weightrelay.api.publisher.model.*;
import io.weightrelay.api.publisher.server.StagingApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 6 implements them. */
@RestController
class StagingController implements StagingApi {

    @Override
    public ResponseEntity<StagingInfo> getStaging() {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getStaging lands with issue 6");
    }

    @Override
    public ResponseEntity<Void> releaseStaging(String reservationId) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("releaseStaging lands with issue 6");
    }

    @Override
    public ResponseEntity<Reservation> reserveStaging(ReservationRequest reservationRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("reserveStaging lands with issue 6");
    }
}
