package io.weightrelay.publisher.staging;

import io.weightrelay.api.publisher.model.Reservation;
import io.weightrelay.api.publisher.model.ReservationRequest;
import io.weightrelay.api.publisher.model.StagingInfo;
import io.weightrelay.api.publisher.server.StagingApi;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.publisher.publish.Publisher;
import io.weightrelay.publisher.segment.SegmentProperties;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.RelayException;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/**
 * Where staging is, reservations and their release. A record: it holds only what it is given and
 * nothing proxies it.
 */
@RestController
record StagingController(StagingArea staging, SegmentProperties segment, Publisher publisher)
        implements StagingApi {

    @Override
    public ResponseEntity<StagingInfo> getStaging() {
        requireServesTrainers();
        return ResponseEntity.ok(
                new StagingInfo(
                                staging.path().toString(),
                                staging.fileSize(),
                                staging.capacity(),
                                staging.freeBytes(),
                                staging.maxBatchBytes(),
                                staging.mode() == StagingArea.Mode.SEGMENT
                                        ? StagingInfo.ModeEnum.SEGMENT
                                        : StagingInfo.ModeEnum.FILE)
                        .node(segment.node()));
    }

    @Override
    public ResponseEntity<Reservation> reserveStaging(ReservationRequest request) {
        requireServesTrainers();
        StoreClient.End end = StoreClient.End.LOW;
        String model = null;
        if (request.getModel() != null && request.getGeneration() != null) {
            publisher.requireNotFailed(
                    new GenerationId(request.getModel(), request.getGeneration()));
            end = StagingArea.end(request.getGeneration());
            model = request.getModel();
        }
        StagingArea.Reservation r;
        try {
            r = staging.reserve(request.getBytes(), end);
        } catch (RelayException full) {
            // In the segment, the room of generations that are retired but not yet collected is
            // room this generation needs: have them collected now, rather than make the rank wait
            // for the next scheduled collection. Another rank's collection may have made room
            // meanwhile, so try again even when this call collected nothing itself.
            if (full.kind() != StagingProblems.STAGING_FULL
                    || model == null
                    || staging.mode() != StagingArea.Mode.SEGMENT) {
                throw full;
            }
            publisher.collectRetired(model);
            r = staging.reserve(request.getBytes(), end);
        }
        return ResponseEntity.ok(new Reservation(r.id(), r.offset(), r.size()));
    }

    @Override
    public ResponseEntity<Void> releaseStaging(String reservationId) {
        staging.release(reservationId);
        return ResponseEntity.noContent().build();
    }

    /** A storage unit's staging is for restores only: trainer ranks go to their own publisher. */
    private void requireServesTrainers() {
        if (!segment.servesTrainers()) {
            throw StagingProblems.SERVES_NO_TRAINER.exception(
                    "publisher '"
                            + segment.name()
                            + "' is a storage unit (relay.segment.role=storage-unit): it owns"
                            + " store memory for the node's client-only publishers and serves no"
                            + " trainer rank");
        }
    }
}
