package io.weightrelay.publisher.segment;

import io.weightrelay.api.publisher.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.model.OwnerCheckpointResult;
import io.weightrelay.api.publisher.model.SegmentInfo;
import io.weightrelay.api.publisher.model.TransportCounters;
import io.weightrelay.api.publisher.server.OwnerApi;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.publisher.checkpoint.OwnerCheckpoints;
import io.weightrelay.service.problem.CommonProblems;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** The segment, its transport counters, and the owner's checkpoint duties. */
@RestController
record OwnerController(SegmentOwner owner, OwnerCheckpoints checkpoints) implements OwnerApi {

    /**
     * common.yaml's {@code Checksum}. The generator constrains list items but not map values, so
     * the values of a save's {@code checksums} are checked here, like every other constraint of the
     * contract, before the save touches the segment.
     */
    private static final String CHECKSUM = "^[a-z0-9]+:[0-9a-f]{8,64}$";

    private static final Pattern CHECKSUM_PATTERN = Pattern.compile(CHECKSUM);

    @Override
    public ResponseEntity<SegmentInfo> getSegmentInfo() {
        Counters c = owner.counters();
        return ResponseEntity.ok(
                new SegmentInfo(
                                owner.segmentName(),
                                owner.node(),
                                owner.size(),
                                owner.size() - owner.freeBytes())
                        .endpoint(owner.endpoint())
                        .storeEndpoint(owner.storeEndpoint().orElse(null))
                        .transport(
                                new TransportCounters(
                                        c.localRead(),
                                        c.localWritten(),
                                        c.tcpRead(),
                                        c.tcpWritten())));
    }

    @Override
    public ResponseEntity<OwnerCheckpointResult> saveOwnedObjects(OwnerCheckpointRequest request) {
        requireChecksums(request.getChecksums());
        return ResponseEntity.ok(checkpoints.save(request));
    }

    @Override
    public ResponseEntity<OwnerCheckpointResult> restoreOwnedObjects(
            OwnerCheckpointRequest request) {
        return ResponseEntity.ok(checkpoints.restore(request));
    }

    /** 400 {@code invalid-request} naming the first object whose checksum the contract forbids. */
    private static void requireChecksums(Map<String, String> checksums) {
        if (checksums == null) {
            return;
        }
        for (Map.Entry<String, String> e : checksums.entrySet()) {
            if (!CHECKSUM_PATTERN.matcher(e.getValue()).matches()) {
                String field = "checksums[" + e.getKey() + "]";
                throw CommonProblems.INVALID_REQUEST
                        .exception(field + " is not a checksum (algorithm:hex)")
                        .with(
                                "errors",
                                List.of(
                                        Map.of(
                                                "field",
                                                field,
                                                "message",
                                                "must match \"" + CHECKSUM + "\"")));
            }
        }
    }
}
