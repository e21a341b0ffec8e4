package io.weightrelay.service.test;

import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import java.net.URI;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.ResultActions;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.request.MockMvcRequestBuilders;

/**
 * What a {@link ServiceWebSlice} test sends and what it expects of a refusal: a request as a role
 * sends it, and the problem+json every service answers an error with.
 */
public final class WebSliceRequests {

    /** The base of every problem {@code type}; a test names the kind after it. */
    private static final String PROBLEMS = "https://weightrelay.io/problems/";

    private WebSliceRequests() {}

    /**
     * {@code method} on {@code path} with the bearer {@code token} (none when null) and the JSON
     * {@code body} (none when null).
     */
    public static MockHttpServletRequestBuilder request(
            HttpMethod method, String path, String token, String body) {
        MockHttpServletRequestBuilder request =
                MockMvcRequestBuilders.request(method, URI.create(path));
        if (token != null) {
            request.header(HttpHeaders.AUTHORIZATION, "Bearer " + token);
        }
        if (body != null) {
            request.contentType(MediaType.APPLICATION_JSON).content(body);
        }
        return request;
    }

    /**
     * Expects {@code result} to be a problem+json answer of {@code status} whose type is the
     * problem kind {@code type}, with a title; returns it for the test's own expectations.
     */
    public static ResultActions expectProblem(ResultActions result, int status, String type)
            throws Exception {
        return result.andExpect(status().is(status))
                .andExpect(content().contentTypeCompatibleWith(MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.type").value(PROBLEMS + type))
                .andExpect(jsonPath("$.status").value(status))
                .andExpect(jsonPath("$.title").isNotEmpty());
    }
}
