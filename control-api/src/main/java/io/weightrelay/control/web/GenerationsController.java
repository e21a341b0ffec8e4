package io.weightrelay.control.web;

import io.weightrelay.api.control.model.*;
import io.weightrelay.api.control.server.GenerationsApi;
import io.weightrelay.service.problem.CommonProblems;
import java.util.List;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 5 implements them. */
@RestController
class GenerationsController implements GenerationsApi {

    @Override
    public ResponseEntity<Generation> abortGeneration(
            String model, Long generation, AbortRequest abortRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("abortGeneration lands with issue 5");
    }

    @Override
    public ResponseEntity<Lease> acquireLease(
            String model, Long generation, LeaseRequest leaseRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("acquireLease lands with issue 5");
    }

    @Override
    public ResponseEntity<Generation> awaitNextActiveGeneration(
            String model, Long after, Integer waitSeconds) {
        throw CommonProblems.NOT_IMPLEMENTED.exception(
                "awaitNextActiveGeneration lands with issue 5");
    }

    @Override
    public ResponseEntity<GcReport> collectGarbage(String model) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("collectGarbage lands with issue 5");
    }

    @Override
    public ResponseEntity<Generation> commitGeneration(String model, Long generation) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("commitGeneration lands with issue 5");
    }

    @Override
    public ResponseEntity<Generation> getActiveGeneration(String model) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getActiveGeneration lands with issue 5");
    }

    @Override
    public ResponseEntity<Generation> getGeneration(String model, Long generation) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getGeneration lands with issue 5");
    }

    @Override
    public ResponseEntity<GenerationManifest> getGenerationManifest(String model, Long generation) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getGenerationManifest lands with issue 5");
    }

    @Override
    public ResponseEntity<List<Generation>> listGenerations(
            String model, GenerationState state, Integer limit) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("listGenerations lands with issue 5");
    }

    @Override
    public ResponseEntity<OpenedGeneration> openGeneration(
            String model, OpenGenerationRequest openGenerationRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("openGeneration lands with issue 5");
    }

    @Override
    public ResponseEntity<RegisterObjectsResponse> registerObjects(
            String model, Long generation, RegisterObjectsRequest registerObjectsRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("registerObjects lands with issue 5");
    }

    @Override
    public ResponseEntity<Void> releaseLease(String model, Long generation, String holder) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("releaseLease lands with issue 5");
    }
}
