package io.weightrelay.loader.web;

import static io.weightrelay.service.test.WebSliceRequests.expectProblem;
import static io.weightrelay.service.test.WebSliceRequests.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsInAnyOrder;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.hasKey;
import static org.hamcrest.Matchers.not;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.doThrow;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.verifyNoInteractions;
import static org.mockito.Mockito.when;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.InstanceSpan;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.instance.DataplaneHolder;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.instance.InstanceProblems;
import io.weightrelay.loader.instance.InstanceService;
import io.weightrelay.loader.pipeline.ApplyCounts;
import io.weightrelay.loader.registration.RegistrationKey;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.loader.registration.RegistrationState;
import io.weightrelay.loader.update.UpdateCoordinator;
import io.weightrelay.loader.update.UpdateProblems;
import io.weightrelay.loader.update.UpdateRun;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.test.ServiceWebSlice;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

/**
 * The loader's web layer alone (controllers, access policy, problem handler, request limits), with
 * the instance service, the data plane and the update coordinator mocked: no Redis, no data plane.
 * What the engine sends maps to the right call and the answer to the contract's JSON; what the
 * access policy or the contract refuses goes out as problem+json and never reaches a service; a
 * domain error of a service keeps its problem type and status.
 */
@ServiceWebSlice
@TestPropertySource(
        properties = {
            "relay.security.tokens.loader[0]=" + LoaderWebSliceTest.ENGINE,
            "relay.security.tokens.operator[0]=" + LoaderWebSliceTest.OPERATOR,
            "relay.security.tokens.trainer[0]=" + LoaderWebSliceTest.TRAINER,
            "relay.security.tokens.metrics[0]=" + LoaderWebSliceTest.METRICS
        })
class LoaderWebSliceTest {

    static final String ENGINE = "slice-engine-token-0123456789";
    static final String OPERATOR = "slice-operator-token-0123456789";
    static final String TRAINER = "slice-trainer-token-0123456789";
    static final String METRICS = "slice-metrics-token-0123456789";

    /**
     * One compat worker with two buffers in one segment and one direct worker with a fragment: what
     * an engine of two ranks on one node registers.
     */
    private static final String REGISTRATION =
            """
            {"instanceId":"inst-0","model":"qwen","group":"g0","node":"node-a",
             "span":{"rolloutInstance":"wide-0","nodes":2},
             "workers":[
              {"workerId":"w0","rank":0,"node":"node-a","nic":"eth0","mode":"compat",
               "buffers":[{"bufferId":"safetensors","segment":"seg-w0","size":5000},
                          {"bufferId":"extra","segment":"seg-w0","size":100}]},
              {"workerId":"w1","rank":1,"node":"node-a","nic":"eth0","mode":"direct",
               "buffers":[{"bufferId":"params","segment":"seg-w1","size":64}],
               "fragments":[{"tensor":"w","offset":[0,0],"shape":[4,4],"bufferId":"params",
                             "bufferOffset":0,"strides":[16,4]}]}]}
            """;

    @Autowired MockMvc mvc;

    @MockitoBean InstanceService instances;
    @MockitoBean DataplaneHolder dataplane;
    @MockitoBean UpdateCoordinator coordinator;

    // --- what each operation maps to, and what it answers

    @Test
    void registrationReachesTheInstanceServiceAndAnswersWhereEachBufferLives() throws Exception {
        ArgumentCaptor<InstanceRegistration> sent =
                ArgumentCaptor.forClass(InstanceRegistration.class);
        when(instances.register(sent.capture()))
                .thenAnswer(a -> instanceOf(a.getArgument(0), 7, null));

        send(HttpMethod.PUT, "/api/v1/instance", ENGINE, REGISTRATION)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.instanceId").value("inst-0"))
                .andExpect(jsonPath("$.model").value("qwen"))
                .andExpect(jsonPath("$.group").value("g0"))
                .andExpect(jsonPath("$.node").value("node-a"))
                .andExpect(jsonPath("$.epoch").value(7))
                .andExpect(jsonPath("$.paused").value(false))
                // No generation before the first update: left out, never null.
                .andExpect(jsonPath("$", not(hasKey("generation"))))
                .andExpect(jsonPath("$.span.rolloutInstance").value("wide-0"))
                .andExpect(jsonPath("$.span.nodes").value(2))
                .andExpect(jsonPath("$.workers.length()").value(2))
                .andExpect(jsonPath("$.workers[1].mode").value("direct"))
                .andExpect(jsonPath("$.workers[1].fragments[0].strides[0]").value(16))
                // Buffers of one segment are packed in order at 4096-aligned offsets.
                .andExpect(jsonPath("$.buffers.length()").value(3))
                .andExpect(jsonPath("$.buffers[0].workerId").value("w0"))
                .andExpect(jsonPath("$.buffers[0].bufferId").value("safetensors"))
                .andExpect(jsonPath("$.buffers[0].segment").value("seg-w0"))
                .andExpect(jsonPath("$.buffers[0].offset").value(0))
                .andExpect(jsonPath("$.buffers[0].size").value(5000))
                .andExpect(jsonPath("$.buffers[0].state").value("UNREGISTERED"))
                .andExpect(jsonPath("$.buffers[1].bufferId").value("extra"))
                .andExpect(jsonPath("$.buffers[1].offset").value(8192))
                .andExpect(jsonPath("$.buffers[2].workerId").value("w1"))
                .andExpect(jsonPath("$.buffers[2].segment").value("seg-w1"))
                .andExpect(jsonPath("$.buffers[2].offset").value(0));

        InstanceRegistration r = sent.getValue();
        assertThat(r.getInstanceId()).isEqualTo("inst-0");
        assertThat(r.getSpan()).isEqualTo(new InstanceSpan("wide-0", 2));
        assertThat(r.getWorkers())
                .extracting(WorkerPlacement::getWorkerId)
                .containsExactly("w0", "w1");
        assertThat(r.getWorkers().get(0).getMode()).isEqualTo(ConsumeMode.COMPAT);
        assertThat(r.getWorkers().get(0).getBuffers())
                .containsExactly(
                        new ReceiveBuffer("safetensors", "seg-w0", 5000L),
                        new ReceiveBuffer("extra", "seg-w0", 100L));
        assertThat(r.getWorkers().get(1).getFragments())
                .containsExactly(
                        new TargetFragment(
                                "w",
                                List.of(0L, 0L),
                                List.of(4L, 4L),
                                "params",
                                0L,
                                List.of(16L, 4L)));
    }

    @Test
    void theInstanceShowsOnlyThisEpochsRegistrationsWithTheirSharedMemoryFiles() throws Exception {
        Instance instance = instanceOf(registration(), 3, 41L);
        when(instances.require()).thenReturn(instance);
        @SuppressWarnings("unchecked")
        RegistrationManager<Segment> registrations = mock(RegistrationManager.class);
        RegistrationKey current = new RegistrationKey(3, "inst-0", "w0", "seg-w0", 8292);
        RegistrationKey stale = new RegistrationKey(2, "inst-0", "w1", "seg-w1", 64);
        RegistrationKey other = new RegistrationKey(3, "inst-9", "w1", "seg-w1", 64);
        when(registrations.snapshot())
                .thenReturn(
                        List.of(
                                new RegistrationManager.Snapshot(
                                        current, RegistrationState.PERSISTENT),
                                new RegistrationManager.Snapshot(
                                        stale, RegistrationState.PERSISTENT),
                                new RegistrationManager.Snapshot(
                                        other, RegistrationState.PROVISIONAL)));
        Segment segment = mock(Segment.class);
        when(segment.shmPath()).thenReturn(Path.of("/dev/shm/wr-seg-w0"));
        when(registrations.find(current)).thenReturn(segment);
        when(dataplane.registrations()).thenReturn(registrations);

        send(HttpMethod.GET, "/api/v1/instance", OPERATOR, null)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.epoch").value(3))
                .andExpect(jsonPath("$.generation").value(41))
                .andExpect(jsonPath("$.buffers[0].state").value("PERSISTENT"))
                .andExpect(jsonPath("$.buffers[0].shmPath").value("/dev/shm/wr-seg-w0"))
                .andExpect(jsonPath("$.buffers[1].state").value("PERSISTENT"))
                // Another epoch's or another instance's registration is not this buffer's.
                .andExpect(jsonPath("$.buffers[2].state").value("UNREGISTERED"))
                .andExpect(jsonPath("$.buffers[2]", not(hasKey("shmPath"))));
    }

    @Test
    void teardownAnswersNoContent() throws Exception {
        send(HttpMethod.DELETE, "/api/v1/instance", ENGINE, null)
                .andExpect(status().isNoContent())
                .andExpect(content().string(""));
        verify(instances).teardown();
    }

    @Test
    void anUpdateStartsWithTheGenerationAndTimeoutAsked() throws Exception {
        UpdateRun run = run(snapshot(UpdateRun.Phase.PREPARING, UpdateRun.Outcome.RUNNING, null));
        when(coordinator.start(5L, Duration.ofSeconds(60))).thenReturn(run);

        send(HttpMethod.POST, "/api/v1/updates", ENGINE, "{\"generation\":5,\"timeoutSeconds\":60}")
                .andExpect(status().isAccepted())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.updateId").value("inst-0:g5:abcd"))
                .andExpect(jsonPath("$.generation").value(5))
                .andExpect(jsonPath("$.previousGeneration").value(4))
                .andExpect(jsonPath("$.phase").value("PREPARING"))
                .andExpect(jsonPath("$.outcome").value("RUNNING"))
                .andExpect(jsonPath("$.bytesDone").value(0))
                .andExpect(jsonPath("$.bytesTotal").value(0));
        verify(coordinator).start(5L, Duration.ofSeconds(60));
    }

    /**
     * An engine that serves through the fetch starts its update to install on request, then asks to
     * install it; asking at the wrong time is a conflict.
     */
    @Test
    void anUpdateInstalledOnRequestStartsServingAndInstallsWhenAsked() throws Exception {
        UpdateRun fetched = run(snapshot(UpdateRun.Phase.FETCHED, UpdateRun.Outcome.RUNNING, null));
        when(coordinator.start(5L, Duration.ofSeconds(60), true)).thenReturn(fetched);
        send(
                        HttpMethod.POST,
                        "/api/v1/updates",
                        ENGINE,
                        "{\"generation\":5,\"timeoutSeconds\":60,\"install\":\"onRequest\"}")
                .andExpect(status().isAccepted())
                .andExpect(jsonPath("$.phase").value("FETCHED"));
        verify(coordinator).start(5L, Duration.ofSeconds(60), true);

        UpdateRun installing =
                run(snapshot(UpdateRun.Phase.INSTALLING, UpdateRun.Outcome.RUNNING, null));
        when(coordinator.install("inst-0:g5:abcd")).thenReturn(installing);
        send(HttpMethod.POST, "/api/v1/updates/inst-0:g5:abcd/install", ENGINE, null)
                .andExpect(status().isAccepted())
                .andExpect(jsonPath("$.phase").value("INSTALLING"));

        when(coordinator.install("inst-0:g6:abcd"))
                .thenThrow(CommonProblems.CONFLICT.exception("update inst-0:g6:abcd is APPLYING"));
        expectProblem(
                        send(
                                HttpMethod.POST,
                                "/api/v1/updates/inst-0:g6:abcd/install",
                                ENGINE,
                                null),
                        409,
                        "conflict")
                .andExpect(jsonPath("$.detail").value("update inst-0:g6:abcd is APPLYING"));
    }

    /**
     * An engine that cannot take a fetched update declines it, with or without a reason; the reason
     * reaches the coordinator as sent, one over 2000 characters is refused naming the field, and
     * declining at the wrong time is a conflict.
     */
    @Test
    void aFetchedUpdateIsDeclinedWithTheEnginesReason() throws Exception {
        UpdateRun ending = run(snapshot(UpdateRun.Phase.FETCHED, UpdateRun.Outcome.RUNNING, null));
        when(coordinator.decline("inst-0:g5:abcd", "session open")).thenReturn(ending);
        send(
                        HttpMethod.POST,
                        "/api/v1/updates/inst-0:g5:abcd/decline",
                        ENGINE,
                        "{\"reason\":\"session open\"}")
                .andExpect(status().isAccepted())
                .andExpect(jsonPath("$.updateId").value("inst-0:g5:abcd"));
        verify(coordinator).decline("inst-0:g5:abcd", "session open");

        when(coordinator.decline("inst-0:g5:abcd", null)).thenReturn(ending);
        send(HttpMethod.POST, "/api/v1/updates/inst-0:g5:abcd/decline", ENGINE, null)
                .andExpect(status().isAccepted());
        verify(coordinator).decline("inst-0:g5:abcd", null);

        expectProblem(
                        send(
                                HttpMethod.POST,
                                "/api/v1/updates/inst-0:g5:abcd/decline",
                                ENGINE,
                                "{\"reason\":\"" + "x".repeat(2001) + "\"}"),
                        400,
                        "invalid-request")
                .andExpect(jsonPath("$.errors[0].field").value("request.reason"));

        when(coordinator.decline("inst-0:g6:abcd", null))
                .thenThrow(CommonProblems.CONFLICT.exception("update inst-0:g6:abcd is APPLYING"));
        expectProblem(
                        send(
                                HttpMethod.POST,
                                "/api/v1/updates/inst-0:g6:abcd/decline",
                                ENGINE,
                                null),
                        409,
                        "conflict")
                .andExpect(jsonPath("$.detail").value("update inst-0:g6:abcd is APPLYING"));
    }

    @Test
    void anUpdateWithoutGenerationOrTimeoutIsTheActiveOneWithinTheDefault300s() throws Exception {
        UpdateRun run = run(snapshot(UpdateRun.Phase.PREPARING, UpdateRun.Outcome.RUNNING, null));
        when(coordinator.start(null, Duration.ofSeconds(300))).thenReturn(run);

        send(HttpMethod.POST, "/api/v1/updates", ENGINE, "{}")
                .andExpect(status().isAccepted())
                .andExpect(jsonPath("$.updateId").value("inst-0:g5:abcd"));
        verify(coordinator).start(null, Duration.ofSeconds(300));
    }

    @Test
    void progressCarriesCountsDurationsAndTransportBytes() throws Exception {
        ApplyCounts counts =
                new ApplyCounts(
                        1000,
                        900,
                        300,
                        1200,
                        3,
                        new Counters(10, 20, 30, 40, 50, 60),
                        new RangeChecksums(List.of()),
                        7_000_000);
        UpdateRun run = run(snapshot(UpdateRun.Phase.DONE, UpdateRun.Outcome.UPDATED, counts));
        when(coordinator.find("inst-0:g5:abcd")).thenReturn(Optional.of(run));

        send(HttpMethod.GET, "/api/v1/updates/inst-0:g5:abcd", ENGINE, null)
                .andExpect(status().isOk())
                .andExpect(content().contentType(MediaType.APPLICATION_JSON))
                .andExpect(jsonPath("$.phase").value("DONE"))
                .andExpect(jsonPath("$.outcome").value("UPDATED"))
                .andExpect(jsonPath("$.bytesDone").value(1200))
                .andExpect(jsonPath("$.bytesTotal").value(1200))
                .andExpect(jsonPath("$.bytesRead").value(1000))
                .andExpect(jsonPath("$.bytesPushed").value(900))
                .andExpect(jsonPath("$.bytesFannedOut").value(300))
                .andExpect(jsonPath("$.bytesReceived").value(1200))
                .andExpect(jsonPath("$.transport.localRead").value(10))
                .andExpect(jsonPath("$.transport.localWritten").value(20))
                .andExpect(jsonPath("$.transport.tcpRead").value(30))
                .andExpect(jsonPath("$.transport.tcpWritten").value(40))
                .andExpect(jsonPath("$.durations.prepareMs").value(12))
                .andExpect(jsonPath("$.durations.applyMs").value(34))
                .andExpect(jsonPath("$.durations.postApplyMs").value(5))
                .andExpect(jsonPath("$.durations.fetchMs").value(46))
                .andExpect(jsonPath("$.durations.installMs").value(5))
                .andExpect(jsonPath("$.durations.pauseMs").value(5))
                .andExpect(jsonPath("$.durations.verifyMs").value(7));
        verify(run, never()).awaitOutcome(any());
    }

    @Test
    void aFailedUpdateNamesItsPeerAndError() throws Exception {
        UpdateRun.Snapshot failed =
                new UpdateRun.Snapshot(
                        "inst-0:g5:abcd",
                        5,
                        4L,
                        UpdateRun.Phase.RESUMED_OLD,
                        UpdateRun.Outcome.RESUMED_OLD,
                        0,
                        1200,
                        null,
                        Map.of(),
                        new UpdateRun.Split(null, null, null),
                        "loader-7",
                        "loader-7 did not prepare");
        UpdateRun run = run(failed);
        when(coordinator.current()).thenReturn(Optional.of(run));

        send(HttpMethod.GET, "/api/v1/updates/current", ENGINE, null)
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.outcome").value("RESUMED_OLD"))
                .andExpect(jsonPath("$.failingPeer").value("loader-7"))
                .andExpect(jsonPath("$.error").value("loader-7 did not prepare"))
                .andExpect(jsonPath("$", not(hasKey("bytesRead"))))
                .andExpect(jsonPath("$", not(hasKey("transport"))))
                .andExpect(jsonPath("$.durations", not(hasKey("applyMs"))));
    }

    @Test
    void waitMsIsALongPollOnTheRunsOutcome() throws Exception {
        UpdateRun run = run(snapshot(UpdateRun.Phase.APPLYING, UpdateRun.Outcome.RUNNING, null));
        UpdateRun.Snapshot done = snapshot(UpdateRun.Phase.DONE, UpdateRun.Outcome.UPDATED, null);
        when(run.awaitOutcome(Duration.ofMillis(2500))).thenReturn(done);
        when(coordinator.find("inst-0:g5:abcd")).thenReturn(Optional.of(run));

        send(HttpMethod.GET, "/api/v1/updates/inst-0:g5:abcd?waitMs=2500", ENGINE, null)
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.outcome").value("UPDATED"));
        verify(run).awaitOutcome(Duration.ofMillis(2500));
    }

    @Test
    void anUnknownUpdateIsUpdateNotFound() throws Exception {
        when(coordinator.find("nope")).thenReturn(Optional.empty());
        expectProblem(
                        send(HttpMethod.GET, "/api/v1/updates/nope", ENGINE, null),
                        404,
                        "update-not-found")
                .andExpect(jsonPath("$.detail").value("no update nope"));
        when(coordinator.current()).thenReturn(Optional.empty());
        expectProblem(
                send(HttpMethod.GET, "/api/v1/updates/current", ENGINE, null),
                404,
                "update-not-found");
    }

    // --- refusals that never reach a service

    @ParameterizedTest(name = "{0} {1} as {2} -> {4} {5}")
    @CsvSource(
            delimiterString = "|",
            quoteCharacter = '`',
            textBlock =
                    """
                    GET    | /api/v1/instance                          |          |                                    | 401 | unauthorized
                    PUT    | /api/v1/instance                          |          | `{}`                               | 401 | unauthorized
                    POST   | /api/v1/updates                           |          | `{}`                               | 401 | unauthorized
                    GET    | /api/v1/no-such-thing                     |          |                                    | 401 | unauthorized
                    GET    | /api/v1/instance                          | unknown  |                                    | 401 | unauthorized
                    PUT    | /api/v1/instance                          | trainer  | REGISTRATION                       | 403 | forbidden
                    POST   | /api/v1/updates                           | trainer  | `{}`                               | 403 | forbidden
                    GET    | /api/v1/updates/current                   | trainer  |                                    | 403 | forbidden
                    DELETE | /api/v1/instance                          | metrics  |                                    | 403 | forbidden
                    GET    | /actuator/env                             | engine   |                                    | 403 | forbidden
                    PUT    | /api/v1/instance                          | engine   | `{"instanceId":`                   | 400 | invalid-request
                    PUT    | /api/v1/instance                          | engine   | `{"instanceId":"a b","model":"m","group":"g","node":"n","workers":[{"workerId":"w","node":"n","nic":"e","mode":"compat","buffers":[{"bufferId":"b","segment":"s","size":1}]}]}` | 400 | invalid-request
                    PUT    | /api/v1/instance                          | engine   | `{"instanceId":"i","model":"m","group":"g","node":"n","workers":[]}` | 400 | invalid-request
                    PUT    | /api/v1/instance                          | engine   | `{"instanceId":"i","model":"m","group":"g","node":"n","workers":[null]}` | 400 | invalid-request
                    PUT    | /api/v1/instance                          | engine   | `{"instanceId":"i","model":"m","group":"g","node":"n","workers":[{"workerId":"w","node":"n","nic":"e","mode":"sideways","buffers":[{"bufferId":"b","segment":"s","size":1}]}]}` | 400 | invalid-request
                    PUT    | /api/v1/instance                          | engine   | `{"instanceId":"i","model":"m","group":"g","node":"n","workers":[{"workerId":"w","node":"n","nic":"e","mode":"compat","buffers":[{"bufferId":"b","segment":"s","size":0}]}]}` | 400 | invalid-request
                    PUT    | /api/v1/instance                          | engine   | `{"instanceId":"i","model":"m","group":"g","node":"n","span":{"rolloutInstance":"r","nodes":0},"workers":[{"workerId":"w","node":"n","nic":"e","mode":"compat","buffers":[{"bufferId":"b","segment":"s","size":1}]}]}` | 400 | invalid-request
                    POST   | /api/v1/updates                           | engine   | `{"generation":0}`                 | 400 | invalid-request
                    POST   | /api/v1/updates                           | engine   | `{"timeoutSeconds":3601}`          | 400 | invalid-request
                    POST   | /api/v1/updates                           | engine   | `{"generation":"latest"}`          | 400 | invalid-request
                    POST   | /api/v1/updates                           | engine   |                                    | 400 | invalid-request
                    GET    | /api/v1/updates/u1?waitMs=10001           | engine   |                                    | 400 | invalid-request
                    GET    | /api/v1/updates/u1?waitMs=-1              | engine   |                                    | 400 | invalid-request
                    GET    | /api/v1/updates/u1?waitMs=soon            | engine   |                                    | 400 | invalid-request
                    GET    | /api/v1/updates/a%20b                     | engine   |                                    | 400 | invalid-request
                    GET    | /api/v1/no-such-thing                     | engine   |                                    | 404 | not-found
                    GET    | /api/v1/updates/u1/extra                  | operator |                                    | 404 | not-found
                    PATCH  | /api/v1/instance                          | engine   | `{}`                               | 405 | method-not-allowed
                    """)
    void refusedBeforeAnyServiceIsCalled(
            String method, String path, String role, String body, int status, String type)
            throws Exception {
        String json = "REGISTRATION".equals(body) ? REGISTRATION : body;
        expectProblem(send(HttpMethod.valueOf(method), path, token(role), json), status, type);
        verifyNoInteractions(instances, dataplane, coordinator);
    }

    @Test
    void aBodyThatIsNotJsonIsUnsupportedMediaType() throws Exception {
        expectProblem(
                mvc.perform(
                        request(HttpMethod.PUT, "/api/v1/instance", ENGINE, null)
                                .contentType(MediaType.TEXT_PLAIN)
                                .content("inst-0")),
                415,
                "unsupported-media-type");
        verifyNoInteractions(instances, dataplane, coordinator);
    }

    @Test
    void invalidFieldsAreNamedInErrors() throws Exception {
        expectProblem(
                        send(
                                HttpMethod.POST,
                                "/api/v1/updates",
                                ENGINE,
                                "{\"generation\":0,\"timeoutSeconds\":0}"),
                        400,
                        "invalid-request")
                .andExpect(jsonPath("$.errors.length()").value(2))
                .andExpect(
                        jsonPath(
                                "$.errors[*].field",
                                containsInAnyOrder("generation", "timeoutSeconds")));
        verifyNoInteractions(coordinator);
    }

    @Test
    void aNullWorkerIsRefusedWhileTheBodyIsReadAndNamed() throws Exception {
        expectProblem(
                        send(
                                HttpMethod.PUT,
                                "/api/v1/instance",
                                ENGINE,
                                "{\"instanceId\":\"i\",\"model\":\"m\",\"group\":\"g\","
                                        + "\"node\":\"n\",\"workers\":[null]}"),
                        400,
                        "invalid-request")
                .andExpect(jsonPath("$.errors[0].field").value("workers[0]"));
        verifyNoInteractions(instances);
    }

    // --- domain errors of the services keep their kind

    @ParameterizedTest(name = "register -> {0} is {1} {2}")
    @CsvSource({
        "INSTANCE_NOT_REGISTERED, 404, instance-not-registered",
        "INVALID_REGISTRATION,    400, invalid-registration",
        "NODE_CHANGED,            409, node-changed",
        "UPDATE_RUNNING,          409, update-running"
    })
    void instanceProblemsKeepTheirTypeAndStatus(String kind, int status, String type)
            throws Exception {
        when(instances.register(any()))
                .thenThrow(InstanceProblems.valueOf(kind).exception("refused: " + kind));
        expectProblem(send(HttpMethod.PUT, "/api/v1/instance", ENGINE, REGISTRATION), status, type)
                .andExpect(jsonPath("$.detail").value("refused: " + kind));
    }

    @Test
    void readingOrTearingDownBeforeRegistrationIsInstanceNotRegistered() throws Exception {
        when(instances.require())
                .thenThrow(InstanceProblems.NOT_REGISTERED.exception("no instance registered"));
        doThrow(InstanceProblems.UPDATE_RUNNING.exception("update u1 runs"))
                .when(instances)
                .teardown();
        expectProblem(
                send(HttpMethod.GET, "/api/v1/instance", ENGINE, null),
                404,
                "instance-not-registered");
        expectProblem(
                        send(HttpMethod.DELETE, "/api/v1/instance", ENGINE, null),
                        409,
                        "update-running")
                .andExpect(jsonPath("$.detail").value("update u1 runs"));
    }

    @ParameterizedTest(name = "start -> {0} is {1} {2}")
    @CsvSource({
        "generation-not-found, 404",
        "update-running,       409",
        "instance-not-registered, 404",
        "unavailable,          503"
    })
    void startProblemsKeepTheirTypeAndStatus(String type, int status) throws Exception {
        ProblemKind kind =
                switch (type) {
                    case "generation-not-found" -> UpdateProblems.GENERATION_NOT_FOUND;
                    case "update-running" -> InstanceProblems.UPDATE_RUNNING;
                    case "instance-not-registered" -> InstanceProblems.NOT_REGISTERED;
                    default -> CommonProblems.UNAVAILABLE;
                };
        when(coordinator.start(any(), any()))
                .thenThrow(kind.exception("model qwen: " + type).with("model", "qwen"));
        expectProblem(send(HttpMethod.POST, "/api/v1/updates", ENGINE, "{}"), status, type)
                .andExpect(jsonPath("$.detail").value("model qwen: " + type))
                .andExpect(jsonPath("$.model").value("qwen"));
    }

    @Test
    void anUnexpectedFailureIsA500ProblemWithoutItsInternals() throws Exception {
        when(coordinator.start(any(), any()))
                .thenThrow(new IllegalStateException("secret-internal-state"));
        expectProblem(send(HttpMethod.POST, "/api/v1/updates", ENGINE, "{}"), 500, "internal-error")
                .andExpect(jsonPath("$.detail", not(containsString("secret-internal-state"))))
                .andExpect(jsonPath("$.detail", containsString("IllegalStateException")));
    }

    // --- helpers

    private ResultActions send(HttpMethod method, String path, String token, String body)
            throws Exception {
        MockHttpServletRequestBuilder request = request(method, path, token, body);
        if (body == null && (method == HttpMethod.POST || method == HttpMethod.PUT)) {
            request.contentType(MediaType.APPLICATION_JSON);
        }
        return mvc.perform(request);
    }

    private static String token(String role) {
        if (role == null) {
            return null;
        }
        return switch (role) {
            case "engine" -> ENGINE;
            case "operator" -> OPERATOR;
            case "trainer" -> TRAINER;
            case "metrics" -> METRICS;
            case "unknown" -> "slice-nobodys-token-0123456789";
            default -> throw new IllegalArgumentException("no role " + role);
        };
    }

    private static InstanceRegistration registration() {
        WorkerPlacement w0 =
                new WorkerPlacement(
                        "w0",
                        "node-a",
                        "eth0",
                        ConsumeMode.COMPAT,
                        List.of(
                                new ReceiveBuffer("safetensors", "seg-w0", 5000L),
                                new ReceiveBuffer("extra", "seg-w0", 100L)));
        WorkerPlacement w1 =
                new WorkerPlacement(
                        "w1",
                        "node-a",
                        "eth0",
                        ConsumeMode.COMPAT,
                        List.of(new ReceiveBuffer("image", "seg-w1", 64L)));
        return new InstanceRegistration("inst-0", "qwen", "g0", "node-a", List.of(w0, w1));
    }

    private static Instance instanceOf(InstanceRegistration r, long epoch, Long generation) {
        return Instance.registered(r, epoch, generation, false);
    }

    private static UpdateRun.Snapshot snapshot(
            UpdateRun.Phase phase, UpdateRun.Outcome outcome, ApplyCounts counts) {
        Map<UpdateRun.Phase, Long> durations = new EnumMap<>(UpdateRun.Phase.class);
        long done = 0;
        if (counts != null) {
            durations.put(UpdateRun.Phase.PREPARING, 12L);
            durations.put(UpdateRun.Phase.APPLYING, 34L);
            durations.put(UpdateRun.Phase.POST_APPLYING, 5L);
            done = counts.bytesReceived();
        }
        return new UpdateRun.Snapshot(
                "inst-0:g5:abcd",
                5,
                4L,
                phase,
                outcome,
                done,
                done,
                counts,
                durations,
                counts == null
                        ? new UpdateRun.Split(null, null, null)
                        : new UpdateRun.Split(46L, 5L, 5L),
                null,
                null);
    }

    private static UpdateRun run(UpdateRun.Snapshot snapshot) {
        UpdateRun run = mock(UpdateRun.class);
        when(run.snapshot()).thenReturn(snapshot);
        when(run.id()).thenReturn(snapshot.id());
        return run;
    }
}
