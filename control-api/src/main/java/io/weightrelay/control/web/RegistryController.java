package io.weightrelay.control.web;

import io.weightrelay.api.control.model.*;
import io.weightrelay.api.control.server.RegistryApi;
import io.weightrelay.service.problem.CommonProblems;
import java.util.List;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 5 implements them. */
@RestController
class RegistryController implements RegistryApi {

    @Override
    public ResponseEntity<Void> deregisterLoader(String instance) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("deregisterLoader lands with issue 5");
    }

    @Override
    public ResponseEntity<Void> deregisterSegment(String segment) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("deregisterSegment lands with issue 5");
    }

    @Override
    public ResponseEntity<Loader> getLoader(String instance) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getLoader lands with issue 5");
    }

    @Override
    public ResponseEntity<SegmentOwner> getSegment(String segment) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getSegment lands with issue 5");
    }

    @Override
    public ResponseEntity<Loader> heartbeatLoader(String instance) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("heartbeatLoader lands with issue 5");
    }

    @Override
    public ResponseEntity<SegmentOwner> heartbeatSegment(String segment) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("heartbeatSegment lands with issue 5");
    }

    @Override
    public ResponseEntity<List<Loader>> listLoaders(String model, String group) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("listLoaders lands with issue 5");
    }

    @Override
    public ResponseEntity<List<SegmentOwner>> listSegments() {
        throw CommonProblems.NOT_IMPLEMENTED.exception("listSegments lands with issue 5");
    }

    @Override
    public ResponseEntity<Loader> registerLoader(
            String instance, LoaderRegistration loaderRegistration) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("registerLoader lands with issue 5");
    }

    @Override
    public ResponseEntity<SegmentOwner> registerSegment(
            String segment, SegmentRegistration segmentRegistration) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("registerSegment lands with issue 5");
    }
}
