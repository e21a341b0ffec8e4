package io.weightrelay.control.web;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.request;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.weightrelay.control.ControlApiTestProperties;
import io.weightrelay.control.Refusals;
import io.weightrelay.control.assignment.AssignmentService;
import io.weightrelay.control.checkpoint.CheckpointRecords;
import io.weightrelay.control.checkpoint.Checkpoints;
import io.weightrelay.control.generation.GenerationGc;
import io.weightrelay.control.generation.GenerationLifecycle;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.Leases;
import io.weightrelay.control.generation.ManifestStore;
import io.weightrelay.control.generation.MooncakeManifests;
import io.weightrelay.control.plan.PlanService;
import io.weightrelay.control.registry.MooncakePlacements;
import io.weightrelay.control.registry.PlacementTemplates;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.control.update.Barriers;
import io.weightrelay.control.update.PhaseReports;
import io.weightrelay.control.update.SessionReads;
import io.weightrelay.control.update.UpdateService;
import io.weightrelay.service.security.AccessPolicy;
import io.weightrelay.service.security.RoleTokenSecurityAutoConfiguration;
import io.weightrelay.service.web.RequestLimitsAutoConfiguration;
import java.net.URI;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvFileSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.FilterType;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.test.context.TestPropertySource;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

/**
 * The web layer alone, with every service mocked and no Redis: requests the contract, the access
 * policy or the request limits refuse never reach a service, and go out as problem+json with the
 * refusal's status and type. Refusals that depend on stored state are {@code BadInputTest}'s.
 */
@WebMvcTest(
        includeFilters =
                @ComponentScan.Filter(
                        type = FilterType.ASSIGNABLE_TYPE,
                        classes = AccessPolicy.class),
        excludeFilters =
                @ComponentScan.Filter(
                        type = FilterType.REGEX,
                        pattern = "io\\.weightrelay\\.control\\.operator\\..*"))
@Import(ManifestTensorsChecked.class)
@ImportAutoConfiguration({
    RoleTokenSecurityAutoConfiguration.class,
    RequestLimitsAutoConfiguration.class
})
@ControlApiTestProperties
@TestPropertySource(properties = "relay.limits.max-request-bytes=1048576")
@MockitoBean(
        types = {
            GenerationLifecycle.class,
            GenerationQueries.class,
            ManifestStore.class,
            MooncakeManifests.class,
            Leases.class,
            GenerationGc.class,
            Registry.class,
            PlacementTemplates.class,
            MooncakePlacements.class,
            PlanService.class,
            AssignmentService.class,
            UpdateService.class,
            PhaseReports.class,
            Barriers.class,
            SessionReads.class,
            Checkpoints.class,
            CheckpointRecords.class
        })
class RequestRefusalTest {

    private static final String MODEL = "m-slice";

    @Autowired MockMvc mvc;

    @ParameterizedTest(name = "{0} {1} as {2} -> {4} {5}")
    @CsvFileSource(
            resources = "/refusals/web.csv",
            delimiterString = "|",
            quoteCharacter = Refusals.QUOTE)
    void refused(String method, String path, String role, String body, int status, String type)
            throws Exception {
        MockHttpServletRequestBuilder request =
                request(HttpMethod.valueOf(method), URI.create(Refusals.expand(path, MODEL)));
        String token = Refusals.token(role);
        if (token != null) {
            request.header(HttpHeaders.AUTHORIZATION, "Bearer " + token);
        }
        if (body != null) {
            request.contentType(MediaType.APPLICATION_JSON).content(Refusals.expand(body, MODEL));
        }
        mvc.perform(request)
                .andExpect(status().is(status))
                .andExpect(content().contentTypeCompatibleWith(MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.type").value("https://weightrelay.io/problems/" + type));
    }
}
