package io.weightrelay.control.generation;

import io.weightrelay.api.control.model.AbortRequest;
import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationManifest;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.Lease;
import io.weightrelay.api.control.model.LeaseRequest;
import io.weightrelay.api.control.model.LostRequest;
import io.weightrelay.api.control.model.OpenGenerationRequest;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.api.control.model.RegisterObjectsRequest;
import io.weightrelay.api.control.model.RegisterObjectsResponse;
import io.weightrelay.api.control.server.GenerationsApi;
import io.weightrelay.control.web.EncodedBodies;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.security.Caller;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.core.io.Resource;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/**
 * @param request the current request (a proxy Spring resolves per call): the encoded manifest goes
 *     out gzip-compressed when it accepts that
 */
@RestController
record GenerationsController(
        GenerationLifecycle lifecycle,
        GenerationQueries generations,
        ManifestStore manifests,
        MooncakeManifests mooncake,
        Leases leases,
        GenerationGc gc,
        HttpServletRequest request)
        implements GenerationsApi {

    @Override
    public ResponseEntity<OpenedGeneration> openGeneration(
            String model, OpenGenerationRequest request) {
        GenerationLifecycle.Opened opened = lifecycle.open(model, request);
        return ResponseEntity.status(opened.created() ? HttpStatus.CREATED : HttpStatus.OK)
                .body(opened.body());
    }

    @Override
    public ResponseEntity<RegisterObjectsResponse> registerObjects(
            String model, Long generation, RegisterObjectsRequest request) {
        return ResponseEntity.ok(lifecycle.register(new GenerationId(model, generation), request));
    }

    @Override
    public ResponseEntity<Generation> commitGeneration(String model, Long generation) {
        return ResponseEntity.ok(lifecycle.commit(new GenerationId(model, generation)));
    }

    @Override
    public ResponseEntity<Generation> abortGeneration(
            String model, Long generation, AbortRequest request) {
        String reason = request == null ? null : request.getReason();
        return ResponseEntity.ok(lifecycle.abort(new GenerationId(model, generation), reason));
    }

    @Override
    public ResponseEntity<Generation> loseGeneration(
            String model, Long generation, LostRequest request) {
        // Only the owner of the segment whose bytes are gone speaks for them (or an operator).
        Caller.requireMayActFor("segment", request.getSegment());
        return ResponseEntity.ok(
                lifecycle.lose(
                        new GenerationId(model, generation),
                        request.getSegment(),
                        request.getObjects(),
                        request.getReason()));
    }

    @Override
    public ResponseEntity<Generation> getGeneration(String model, Long generation) {
        return ResponseEntity.ok(generations.get(new GenerationId(model, generation)));
    }

    @Override
    public ResponseEntity<GenerationManifest> getGenerationManifest(String model, Long generation) {
        return ResponseEntity.ok(manifests.manifest(new GenerationId(model, generation)));
    }

    @Override
    public ResponseEntity<Resource> getGenerationManifestEncoded(String model, Long generation) {
        GenerationId id = new GenerationId(model, generation);
        return EncodedBodies.negotiated(
                request, () -> manifests.gzippedManifest(id), () -> manifests.encodedManifest(id));
    }

    @Override
    public ResponseEntity<Map<String, Object>> getGenerationManifestMooncake3187(
            String model, Long generation) {
        MooncakeManifests.Exported exported = mooncake.export(new GenerationId(model, generation));
        return ResponseEntity.ok().eTag(exported.digest()).body(exported.body());
    }

    @Override
    public ResponseEntity<List<Generation>> listGenerations(
            String model, GenerationState state, Long trainerStep, Integer limit) {
        return ResponseEntity.ok(
                generations.list(model, state, trainerStep, limit == null ? 100 : limit));
    }

    @Override
    public ResponseEntity<Generation> getActiveGeneration(String model) {
        return ResponseEntity.ok(generations.active(model));
    }

    @Override
    public ResponseEntity<Generation> awaitNextActiveGeneration(
            String model, Long after, Integer waitSeconds) {
        Duration wait = Duration.ofSeconds(waitSeconds == null ? 30 : waitSeconds);
        return generations
                .awaitNewerThan(model, after, wait)
                .map(ResponseEntity::ok)
                .orElseGet(() -> ResponseEntity.noContent().build());
    }

    @Override
    public ResponseEntity<Lease> acquireLease(String model, Long generation, LeaseRequest request) {
        // A loader holds generations in its own name: a token bound to another one is refused.
        Caller.requireMayActFor("instance", request.getHolder());
        return ResponseEntity.ok(
                leases.lease(
                        new GenerationId(model, generation),
                        request.getHolder(),
                        request.getTtlSeconds()));
    }

    @Override
    public ResponseEntity<Void> releaseLease(String model, Long generation, String holder) {
        leases.release(new GenerationId(model, generation), holder);
        return ResponseEntity.noContent().build();
    }

    @Override
    public ResponseEntity<GcReport> collectGarbage(String model) {
        return ResponseEntity.ok(gc.collectGarbage(model));
    }
}
