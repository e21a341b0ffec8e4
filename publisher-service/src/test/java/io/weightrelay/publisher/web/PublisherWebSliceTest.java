package io.weightrelay.publisher.web;

import static io.weightrelay.service.test.WebSliceRequests.expectProblem;
import static io.weightrelay.service.test.WebSliceRequests.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.hasKey;
import static org.hamcrest.Matchers.not;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.eq;
import static org.mockito.Mockito.doThrow;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.verifyNoInteractions;
import static org.mockito.Mockito.when;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.publisher.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.model.OwnerCheckpointResult;
import io.weightrelay.api.publisher.model.PublishBatchRequest;
import io.weightrelay.api.publisher.model.PublishBatchResult;
import io.weightrelay.api.publisher.model.PublishState;
import io.weightrelay.api.publisher.model.PublishStatus;
import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.publisher.checkpoint.CheckpointProblems;
import io.weightrelay.publisher.checkpoint.OwnerCheckpoints;
import io.weightrelay.publisher.publish.PublishProblems;
import io.weightrelay.publisher.publish.Publisher;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.segment.SegmentProperties;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.publisher.staging.StagingProblems;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import io.weightrelay.service.test.ServiceWebSlice;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mockito.ArgumentCaptor;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.test.context.TestPropertySource;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.ResultActions;

/**
 * The publisher's web layer alone (the staging, publish and owner controllers, the access policy,
 * the problem handler, the request limits), with the staging area, the publisher, the segment and
 * the checkpoints mocked: no Redis, no segment, no data plane. What a rank or control-api sends
 * maps to the right call and the answer to the contract's JSON; what the access policy or the
 * contract refuses goes out as problem+json and never reaches a service; a domain error of a
 * service keeps its problem type and status.
 */
@ServiceWebSlice
@TestPropertySource(
        properties = {
            "relay.security.tokens.trainer[0]=" + PublisherWebSliceTest.TRAINER,
            "relay.security.tokens.operator[0]=" + PublisherWebSliceTest.OPERATOR,
            "relay.security.tokens.loader[0]=" + PublisherWebSliceTest.LOADER,
            "relay.security.tokens.owner[0]=" + PublisherWebSliceTest.OWNER,
            "relay.security.tokens.metrics[0]=" + PublisherWebSliceTest.METRICS
        })
class PublisherWebSliceTest {

    private static final GenerationId QWEN_3 = new GenerationId("qwen", 3);

    static final String TRAINER = "slice-trainer-token-0123456789";
    static final String OPERATOR = "slice-operator-token-0123456789";
    static final String LOADER = "slice-loader-token-0123456789";
    static final String OWNER = "slice-owner-token-0123456789";
    static final String METRICS = "slice-metrics-token-0123456789";

    private static final String GEN = "/api/v1/models/qwen/generations/3";
    private static final String CRC = "crc32c:0badf00d";

    /** Two tensors of one reservation, the second a later part of its tensor. */
    private static final String BATCH =
            """
            {"reservationId":"r-1","tensors":[
              {"name":"w","dtype":"fp32","shape":[4,4],"stagingOffset":0,"bytes":64,
               "checksum":"crc32c:0badf00d"},
              {"name":"v","dtype":"bf16","shape":[1024],"stagingOffset":64,"bytes":1024,
               "tensorOffset":1024}]}
            """;

    private static final String SAVE =
            """
            {"model":"qwen","generation":3,"directory":"/ckpt/qwen-3",
             "checksums":{"qwen/3/w@0":"crc32c:0badf00d"}}
            """;

    private static final String RESTORE =
            """
            {"model":"qwen","generation":3,"directory":"/ckpt/qwen-3",
             "objects":[{"key":"qwen/3/w@0","size":64,"checksum":"crc32c:0badf00d",
                         "file":"seg-a.bin","offset":0}]}
            """;

    @Autowired MockMvc mvc;

    @MockitoBean StagingArea staging;
    @MockitoBean SegmentProperties segment;
    @MockitoBean Publisher publisher;
    @MockitoBean SegmentOwner owner;
    @MockitoBean OwnerCheckpoints checkpoints;

    @BeforeEach
    void aTrainerNodesPublisher() {
        when(segment.servesTrainers()).thenReturn(true);
        when(segment.node()).thenReturn("node-a");
        when(segment.name()).thenReturn("publisher-node-a");
    }

    // --- what each operation maps to, and what it answers

    @Test
    void stagingSaysWhereRanksWriteAndHowMuchIsFree() throws Exception {
        when(staging.path()).thenReturn(Path.of("/dev/shm/wr-seg-a"));
        when(staging.fileSize()).thenReturn(1L << 30);
        when(staging.capacity()).thenReturn(512L << 20);
        when(staging.freeBytes()).thenReturn(100L << 20);
        when(staging.maxBatchBytes()).thenReturn(128L << 20);
        when(staging.mode()).thenReturn(StagingArea.Mode.SEGMENT);

        send(HttpMethod.GET, "/api/v1/staging", TRAINER, null)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.path").value("/dev/shm/wr-seg-a"))
                .andExpect(jsonPath("$.fileSize").value(1L << 30))
                .andExpect(jsonPath("$.capacity").value(512L << 20))
                .andExpect(jsonPath("$.free").value(100L << 20))
                .andExpect(jsonPath("$.maxBatchBytes").value(128L << 20))
                .andExpect(jsonPath("$.mode").value("segment"))
                .andExpect(jsonPath("$.node").value("node-a"));

        when(staging.mode()).thenReturn(StagingArea.Mode.FILE);
        send(HttpMethod.GET, "/api/v1/staging", OPERATOR, null)
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.mode").value("file"));
    }

    @Test
    void aReservationWithoutItsGenerationTakesTheLowEnd() throws Exception {
        when(staging.reserve(4096L, StoreClient.End.LOW))
                .thenReturn(new StagingArea.Reservation("r-1", 8192, 4096, Instant.EPOCH, false));

        send(HttpMethod.POST, "/api/v1/staging/reservations", TRAINER, "{\"bytes\":4096}")
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.reservationId").value("r-1"))
                .andExpect(jsonPath("$.offset").value(8192))
                .andExpect(jsonPath("$.size").value(4096));
        verify(publisher, never()).requireNotFailed(any());
    }

    @Test
    void aReservationForAGenerationChecksItHasNotFailedAndTakesItsEnd() throws Exception {
        when(staging.reserve(4096L, StagingArea.end(3)))
                .thenReturn(new StagingArea.Reservation("r-2", 0, 4096, Instant.EPOCH, false));

        send(
                        HttpMethod.POST,
                        "/api/v1/staging/reservations",
                        TRAINER,
                        "{\"bytes\":4096,\"model\":\"qwen\",\"generation\":3}")
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.reservationId").value("r-2"));
        verify(publisher).requireNotFailed(QWEN_3);
        verify(staging).reserve(4096L, StoreClient.End.HIGH);
    }

    @Test
    void aReleaseAnswersNoContent() throws Exception {
        send(HttpMethod.DELETE, "/api/v1/staging/reservations/r-1", TRAINER, null)
                .andExpect(status().isNoContent())
                .andExpect(content().string(""));
        verify(staging).release("r-1");
    }

    @Test
    void aBatchReachesThePublisherWhole() throws Exception {
        ArgumentCaptor<PublishBatchRequest> sent =
                ArgumentCaptor.forClass(PublishBatchRequest.class);
        when(publisher.publishBatch(eq(QWEN_3), sent.capture()))
                .thenReturn(new PublishBatchResult(2, 3, 1088L, 1056L).bytesStoredRemote(0L));

        send(HttpMethod.POST, GEN + "/batches", TRAINER, BATCH)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.tensors").value(2))
                .andExpect(jsonPath("$.objects").value(3))
                .andExpect(jsonPath("$.bytesStaged").value(1088))
                .andExpect(jsonPath("$.bytesStored").value(1056))
                .andExpect(jsonPath("$.bytesStoredRemote").value(0));

        PublishBatchRequest batch = sent.getValue();
        assertThat(batch.getReservationId()).isEqualTo("r-1");
        assertThat(batch.getTensors()).hasSize(2);
        StagedTensor w = batch.getTensors().get(0);
        assertThat(w.getName()).isEqualTo("w");
        assertThat(w.getDtype()).isEqualTo(Dtype.FP32);
        assertThat(w.getShape()).containsExactly(4L, 4L);
        assertThat(w.getBytes()).isEqualTo(64L);
        assertThat(w.getChecksum()).isEqualTo(CRC);
        // The contract's default: a part that does not say where it starts is the tensor's start.
        assertThat(w.getTensorOffset()).isZero();
        StagedTensor v = batch.getTensors().get(1);
        assertThat(v.getDtype()).isEqualTo(Dtype.BF16);
        assertThat(v.getStagingOffset()).isEqualTo(64L);
        assertThat(v.getTensorOffset()).isEqualTo(1024L);
        assertThat(v.getChecksum()).isNull();
    }

    @Test
    void openFinishAndStatusAnswerThePublishStatus() throws Exception {
        when(publisher.open(QWEN_3)).thenReturn(publishStatus(PublishState.OPEN, null));
        when(publisher.finish(QWEN_3)).thenReturn(publishStatus(PublishState.FINISHED, null));
        when(publisher.status(QWEN_3))
                .thenReturn(publishStatus(PublishState.FAILED, "store-failed: no room"));

        send(HttpMethod.PUT, GEN, TRAINER, null)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.model").value("qwen"))
                .andExpect(jsonPath("$.generation").value(3))
                .andExpect(jsonPath("$.state").value("OPEN"))
                .andExpect(jsonPath("$.tensors").value(2))
                .andExpect(jsonPath("$.objects").value(3))
                .andExpect(jsonPath("$.bytesStaged").value(1088))
                .andExpect(jsonPath("$.bytesConverted").value(1088))
                .andExpect(jsonPath("$.bytesStoredLocal").value(1056))
                .andExpect(jsonPath("$.bytesStoredRemote").value(0))
                .andExpect(jsonPath("$.objectsRegistered").value(3))
                .andExpect(jsonPath("$", not(hasKey("failure"))));
        send(HttpMethod.POST, GEN + "/finish", TRAINER, null)
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.state").value("FINISHED"));
        // Reads are open to the loader and operator roles too.
        send(HttpMethod.GET, GEN, LOADER, null)
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.state").value("FAILED"))
                .andExpect(jsonPath("$.failure").value("store-failed: no room"));
        verify(publisher).open(QWEN_3);
        verify(publisher).finish(QWEN_3);
        verify(publisher).status(QWEN_3);
    }

    @Test
    void theSegmentReportsItsUseAndTransportBytes() throws Exception {
        when(owner.segmentName()).thenReturn("seg-a");
        when(owner.node()).thenReturn("node-a");
        when(owner.size()).thenReturn(1L << 20);
        when(owner.freeBytes()).thenReturn(1L << 18);
        when(owner.endpoint()).thenReturn("127.0.0.1:40001");
        when(owner.counters()).thenReturn(new Counters(1, 2, 3, 4, 5, 6));

        send(HttpMethod.GET, "/api/v1/segment", LOADER, null)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.segment").value("seg-a"))
                .andExpect(jsonPath("$.node").value("node-a"))
                .andExpect(jsonPath("$.endpoint").value("127.0.0.1:40001"))
                .andExpect(jsonPath("$.size").value(1L << 20))
                .andExpect(jsonPath("$.used").value((1L << 20) - (1L << 18)))
                .andExpect(jsonPath("$.transport.localRead").value(1))
                .andExpect(jsonPath("$.transport.localWritten").value(2))
                .andExpect(jsonPath("$.transport.tcpRead").value(3))
                .andExpect(jsonPath("$.transport.tcpWritten").value(4));
    }

    @Test
    void saveAndRestoreAreTheOwnersDutiesCalledWithTheOwnerToken() throws Exception {
        ArgumentCaptor<OwnerCheckpointRequest> saved =
                ArgumentCaptor.forClass(OwnerCheckpointRequest.class);
        OwnerCheckpointObject object =
                new OwnerCheckpointObject("qwen/3/w@0", 64L, CRC, "seg-a.bin", 0L);
        when(checkpoints.save(saved.capture()))
                .thenReturn(
                        new OwnerCheckpointResult("seg-a", 1L, 64L, 0.25)
                                .file("seg-a.bin")
                                .saved(List.of(object)));
        ArgumentCaptor<OwnerCheckpointRequest> restored =
                ArgumentCaptor.forClass(OwnerCheckpointRequest.class);
        when(checkpoints.restore(restored.capture()))
                .thenReturn(new OwnerCheckpointResult("seg-a", 1L, 64L, 0.5));

        send(HttpMethod.POST, "/api/v1/checkpoints/save", OWNER, SAVE)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.segment").value("seg-a"))
                .andExpect(jsonPath("$.objects").value(1))
                .andExpect(jsonPath("$.bytes").value(64))
                .andExpect(jsonPath("$.seconds").value(0.25))
                .andExpect(jsonPath("$.file").value("seg-a.bin"))
                .andExpect(jsonPath("$.saved[0].key").value("qwen/3/w@0"))
                .andExpect(jsonPath("$.saved[0].offset").value(0));
        assertThat(saved.getValue().getDirectory()).isEqualTo("/ckpt/qwen-3");
        assertThat(saved.getValue().getChecksums()).isEqualTo(Map.of("qwen/3/w@0", CRC));

        send(HttpMethod.POST, "/api/v1/checkpoints/restore", OWNER, RESTORE)
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.seconds").value(0.5))
                .andExpect(jsonPath("$", not(hasKey("file"))));
        assertThat(restored.getValue().getObjects()).containsExactly(object);
    }

    // --- refusals that never reach a service

    @ParameterizedTest(name = "{0} {1} as {2} -> {4} {5}")
    @CsvSource(
            delimiterString = "|",
            quoteCharacter = '`',
            textBlock =
                    """
                    GET    | /api/v1/staging                                  |          |                       | 401 | unauthorized
                    POST   | /api/v1/staging/reservations                     |          | `{"bytes":1}`         | 401 | unauthorized
                    POST   | /api/v1/checkpoints/save                         |          | SAVE                  | 401 | unauthorized
                    POST   | /api/v1/staging/reservations                     | unknown  | `{"bytes":1}`         | 401 | unauthorized
                    POST   | /api/v1/checkpoints/save                         | loader   | SAVE                  | 403 | forbidden
                    POST   | /api/v1/checkpoints/save                         | trainer  | SAVE                  | 403 | forbidden
                    POST   | /api/v1/checkpoints/save                         | operator | SAVE                  | 403 | forbidden
                    POST   | /api/v1/checkpoints/restore                      | loader   | RESTORE               | 403 | forbidden
                    POST   | /api/v1/checkpoints/restore                      | trainer  | RESTORE               | 403 | forbidden
                    POST   | /api/v1/staging/reservations                     | loader   | `{"bytes":1}`         | 403 | forbidden
                    POST   | /api/v1/staging/reservations                     | owner    | `{"bytes":1}`         | 403 | forbidden
                    POST   | /api/v1/staging/reservations                     | operator | `{"bytes":1}`         | 403 | forbidden
                    GET    | /api/v1/staging                                  | loader   |                       | 403 | forbidden
                    POST   | /api/v1/models/qwen/generations/3/batches        | loader   | BATCH                 | 403 | forbidden
                    POST   | /api/v1/models/qwen/generations/3/batches        | operator | BATCH                 | 403 | forbidden
                    PUT    | /api/v1/models/qwen/generations/3                | owner    |                       | 403 | forbidden
                    POST   | /api/v1/models/qwen/generations/3/finish         | loader   |                       | 403 | forbidden
                    DELETE | /api/v1/staging/reservations/r-1                 | loader   |                       | 403 | forbidden
                    GET    | /api/v1/segment                                  | metrics  |                       | 403 | forbidden
                    GET    | /api/v1/segment                                  | owner    |                       | 403 | forbidden
                    POST   | /api/v1/staging/reservations                     | trainer  | `{"bytes":0}`         | 400 | invalid-request
                    POST   | /api/v1/staging/reservations                     | trainer  | `{}`                  | 400 | invalid-request
                    POST   | /api/v1/staging/reservations                     | trainer  | `{"bytes":`           | 400 | invalid-request
                    POST   | /api/v1/staging/reservations                     | trainer  | `{"bytes":"many"}`    | 400 | invalid-request
                    POST   | /api/v1/staging/reservations                     | trainer  | `{"bytes":1,"model":"","generation":2}` | 400 | invalid-request
                    POST   | /api/v1/staging/reservations                     | trainer  | `{"bytes":1,"model":"m","generation":0}` | 400 | invalid-request
                    DELETE | /api/v1/staging/reservations/r_1                 | trainer  |                       | 400 | invalid-request
                    POST   | /api/v1/models/qwen/generations/3/batches        | trainer  | `{"reservationId":"r-1","tensors":[]}` | 400 | invalid-request
                    POST   | /api/v1/models/qwen/generations/3/batches        | trainer  | `{"reservationId":"r 1","tensors":[{"name":"w","dtype":"fp32","shape":[1],"stagingOffset":0,"bytes":4}]}` | 400 | invalid-request
                    POST   | /api/v1/models/qwen/generations/3/batches        | trainer  | `{"reservationId":"r-1","tensors":[{"name":"w","dtype":"fp4","shape":[1],"stagingOffset":0,"bytes":4}]}` | 400 | invalid-request
                    POST   | /api/v1/models/qwen/generations/3/batches        | trainer  | `{"reservationId":"r-1","tensors":[{"name":"w","dtype":"fp32","shape":[-1],"stagingOffset":0,"bytes":4}]}` | 400 | invalid-request
                    POST   | /api/v1/models/qwen/generations/3/batches        | trainer  | `{"reservationId":"r-1","tensors":[{"name":"w","dtype":"fp32","shape":[1],"stagingOffset":0,"bytes":4,"checksum":"not a checksum"}]}` | 400 | invalid-request
                    POST   | /api/v1/models/qwen/generations/3/batches        | trainer  | `{"reservationId":"r-1","tensors":[null]}` | 400 | invalid-request
                    POST   | /api/v1/models/qwen/generations/0/batches        | trainer  | BATCH                 | 400 | invalid-request
                    POST   | /api/v1/models/bad%20model/generations/3/batches | trainer  | BATCH                 | 400 | invalid-request
                    PUT    | /api/v1/models/qwen/generations/latest           | trainer  |                       | 400 | invalid-request
                    GET    | /api/v1/models/qwen/generations/-1               | operator |                       | 400 | invalid-request
                    POST   | /api/v1/checkpoints/save                         | owner    | `{"model":"qwen","generation":3}` | 400 | invalid-request
                    POST   | /api/v1/checkpoints/save                         | owner    | `{"model":"qwen","generation":0,"directory":"/d"}` | 400 | invalid-request
                    POST   | /api/v1/checkpoints/save                         | owner    | `{"model":"qwen","generation":3,"directory":"/d","checksums":{"k":"bad"}}` | 400 | invalid-request
                    POST   | /api/v1/checkpoints/save                         | owner    | `{"model":"qwen","generation":3,"directory":"/d","checksums":{"k":null}}` | 400 | invalid-request
                    POST   | /api/v1/checkpoints/restore                      | owner    | `{"model":"qwen","generation":3,"directory":"/d","objects":[{"key":"k","size":1,"checksum":"crc32c:0badf00d","file":"../etc/passwd","offset":0}]}` | 400 | invalid-request
                    GET    | /api/v1/no-such-thing                            | operator |                       | 404 | not-found
                    GET    | /api/v1/models/qwen/generations/3/objects        | trainer  |                       | 404 | not-found
                    PATCH  | /api/v1/staging                                  | operator | `{}`                  | 405 | method-not-allowed
                    """)
    void refusedBeforeAnyServiceIsCalled(
            String method, String path, String role, String body, int status, String type)
            throws Exception {
        expectProblem(
                send(HttpMethod.valueOf(method), path, token(role), body(body)), status, type);
        verifyNoInteractions(staging, publisher, owner, checkpoints);
    }

    @Test
    void aSaveWithAChecksumTheContractForbidsIsRefusedNamingTheObject() throws Exception {
        expectProblem(
                        send(
                                HttpMethod.POST,
                                "/api/v1/checkpoints/save",
                                OWNER,
                                "{\"model\":\"qwen\",\"generation\":3,\"directory\":\"/d\","
                                        + "\"checksums\":{\"qwen/3/w@0\":\"crc32c:0badf00d\","
                                        + "\"qwen/3/v@0\":\"sha256:XYZ\"}}"),
                        400,
                        "invalid-request")
                .andExpect(jsonPath("$.detail", containsString("qwen/3/v@0")))
                .andExpect(jsonPath("$.errors[0].field").value("checksums[qwen/3/v@0]"));
        verifyNoInteractions(checkpoints);
    }

    @Test
    void aBodyThatIsNotJsonIsUnsupportedMediaType() throws Exception {
        expectProblem(
                mvc.perform(
                        request(HttpMethod.POST, "/api/v1/staging/reservations", TRAINER, null)
                                .contentType(MediaType.TEXT_PLAIN)
                                .content("4096")),
                415,
                "unsupported-media-type");
        verifyNoInteractions(staging, publisher);
    }

    @Test
    void aStorageUnitRefusesStagingWithoutTouchingIt() throws Exception {
        when(segment.servesTrainers()).thenReturn(false);
        expectProblem(
                        send(HttpMethod.GET, "/api/v1/staging", TRAINER, null),
                        409,
                        "storage-unit-serves-no-trainer")
                .andExpect(jsonPath("$.detail", containsString("publisher-node-a")));
        expectProblem(
                send(HttpMethod.POST, "/api/v1/staging/reservations", TRAINER, "{\"bytes\":1}"),
                409,
                "storage-unit-serves-no-trainer");
        verifyNoInteractions(staging, publisher);
    }

    // --- domain errors of the services keep their kind

    @Test
    void fullStagingIsA429ThatSaysWhenToRetry() throws Exception {
        RelayException full =
                StagingProblems.STAGING_FULL
                        .exception("no contiguous 4096 bytes free in staging")
                        .with("freeBytes", 1024L);
        full.getHeaders().set("Retry-After", "1");
        full.getHeaders().set("Retry-After-Ms", "200");
        when(staging.reserve(4096L, StoreClient.End.LOW)).thenThrow(full);

        expectProblem(
                        send(
                                HttpMethod.POST,
                                "/api/v1/staging/reservations",
                                TRAINER,
                                "{\"bytes\":4096}"),
                        429,
                        "staging-full")
                .andExpect(header().string("Retry-After", "1"))
                .andExpect(header().string("Retry-After-Ms", "200"))
                .andExpect(jsonPath("$.freeBytes").value(1024));
    }

    @Test
    void aFailedGenerationGetsNoReservation() throws Exception {
        doThrow(PublishProblems.GENERATION_FAILED.exception("generation 3 of qwen failed"))
                .when(publisher)
                .requireNotFailed(QWEN_3);
        expectProblem(
                send(
                        HttpMethod.POST,
                        "/api/v1/staging/reservations",
                        TRAINER,
                        "{\"bytes\":4096,\"model\":\"qwen\",\"generation\":3}"),
                409,
                "generation-failed");
        verifyNoInteractions(staging);
    }

    @ParameterizedTest(name = "release -> {0} is {1} {2}")
    @CsvSource({
        "RESERVATION_NOT_FOUND, 404, reservation-not-found",
        "RESERVATION_BUSY,      409, reservation-busy"
    })
    void releaseProblemsKeepTheirTypeAndStatus(String kind, int status, String type)
            throws Exception {
        doThrow(StagingProblems.valueOf(kind).exception("reservation r-1: " + type))
                .when(staging)
                .release("r-1");
        expectProblem(
                        send(HttpMethod.DELETE, "/api/v1/staging/reservations/r-1", TRAINER, null),
                        status,
                        type)
                .andExpect(jsonPath("$.detail").value("reservation r-1: " + type));
    }

    @ParameterizedTest(name = "batch -> {0} is {1} {2}")
    @CsvSource({
        "GENERATION_FAILED,      409, generation-failed",
        "GENERATION_FINISHED,    409, generation-finished",
        "MANIFEST_MISMATCH,      400, manifest-mismatch",
        "ALREADY_STORED,         409, already-stored",
        "STORE_FAILED,           503, store-failed",
        "CONTROL_API_FAILED,     503, control-api-failed",
        "CHECKSUM_MISMATCH,      400, checksum-mismatch",
        "UNSUPPORTED_CONVERSION, 400, unsupported-conversion"
    })
    void batchProblemsKeepTheirTypeAndStatus(String kind, int status, String type)
            throws Exception {
        when(publisher.publishBatch(eq(QWEN_3), any()))
                .thenThrow(
                        PublishProblems.valueOf(kind)
                                .exception("batch r-1: " + type)
                                .with("tensor", "w"));
        expectProblem(send(HttpMethod.POST, GEN + "/batches", TRAINER, BATCH), status, type)
                .andExpect(jsonPath("$.detail").value("batch r-1: " + type))
                .andExpect(jsonPath("$.tensor").value("w"));
    }

    @Test
    void anUnknownGenerationIsGenerationNotFound() throws Exception {
        when(publisher.status(QWEN_3))
                .thenThrow(PublishProblems.GENERATION_NOT_FOUND.exception("no generation 3"));
        expectProblem(send(HttpMethod.GET, GEN, OPERATOR, null), 404, "generation-not-found");
    }

    @ParameterizedTest(name = "checkpoint -> {0} is {1} {2}")
    @CsvSource({
        "CHECKPOINT_CORRUPT,   409, checkpoint-corrupt",
        "CHECKSUMS_REQUIRED,   400, checksums-required",
        "CHECKPOINT_IO_FAILED, 503, checkpoint-io-failed"
    })
    void checkpointProblemsKeepTheirTypeAndStatus(String kind, int status, String type)
            throws Exception {
        ProblemKind problem = CheckpointProblems.valueOf(kind);
        when(checkpoints.save(any()))
                .thenThrow(problem.exception("save: " + type).with("object", "qwen/3/w@0"));
        expectProblem(send(HttpMethod.POST, "/api/v1/checkpoints/save", OWNER, SAVE), status, type)
                .andExpect(jsonPath("$.object").value("qwen/3/w@0"));
    }

    @Test
    void anUnexpectedFailureIsA500ProblemWithoutItsInternals() throws Exception {
        when(publisher.finish(QWEN_3))
                .thenThrow(new IllegalStateException("secret-internal-state"));
        expectProblem(send(HttpMethod.POST, GEN + "/finish", TRAINER, null), 500, "internal-error")
                .andExpect(jsonPath("$.detail", not(containsString("secret-internal-state"))))
                .andExpect(jsonPath("$.detail", containsString("IllegalStateException")));
    }

    // --- helpers

    private ResultActions send(HttpMethod method, String path, String token, String body)
            throws Exception {
        return mvc.perform(request(method, path, token, body));
    }

    /** A body of the refusal table: a named one of this class, or the cell itself. */
    private static String body(String cell) {
        if (cell == null) {
            return null;
        }
        return switch (cell) {
            case "BATCH" -> BATCH;
            case "SAVE" -> SAVE;
            case "RESTORE" -> RESTORE;
            default -> cell;
        };
    }

    private static String token(String role) {
        if (role == null) {
            return null;
        }
        return switch (role) {
            case "trainer" -> TRAINER;
            case "operator" -> OPERATOR;
            case "loader" -> LOADER;
            case "owner" -> OWNER;
            case "metrics" -> METRICS;
            case "unknown" -> "slice-nobodys-token-0123456789";
            default -> throw new IllegalArgumentException("no role " + role);
        };
    }

    private static PublishStatus publishStatus(PublishState state, String failure) {
        return new PublishStatus("qwen", 3L, state, 2L, 3L, 1088L, 1088L, 1056L, 0L, 3L)
                .failure(failure);
    }
}
