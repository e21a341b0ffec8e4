package io.weightrelay.service.web;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Refuses, before anything reads them, request bodies that would exceed memory: one above {@code
 * relay.limits.max-request-bytes} with 413 {@code payload-too-large}, and any whose bytes together
 * with the bodies already being handled would exceed {@code
 * relay.limits.max-in-flight-request-bytes} with 503 {@code overloaded} and {@code Retry-After}, so
 * a burst of large requests degrades into quick refusals instead of an exhausted heap. Each problem
 * names its limit. A gzip body counts {@link BoundedRequestBodies#INFLATION} times its wire size;
 * one of unknown length is held to the per-request limit as it is read ({@link
 * BoundedRequestBodies}). The body itself is still bounded by the contract's item limits.
 */
public class RequestLimits implements WebMvcConfigurer {

    private static final String ADMITTED = RequestLimits.class.getName() + ".admitted";

    private final RequestLimitProperties properties;
    private final long budget;
    private final AtomicLong inFlight = new AtomicLong();

    public RequestLimits(RequestLimitProperties properties) {
        this.properties = properties;
        this.budget = properties.inFlightBudget();
    }

    @Override
    public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(
                new HandlerInterceptor() {
                    @Override
                    public boolean preHandle(
                            HttpServletRequest request,
                            HttpServletResponse response,
                            Object handler) {
                        long length = request.getContentLengthLong();
                        if (length > properties.maxRequestBytes()) {
                            throw CommonProblems.PAYLOAD_TOO_LARGE
                                    .exception(
                                            "request body of "
                                                    + length
                                                    + " bytes exceeds the limit of "
                                                    + properties.maxRequestBytes()
                                                    + " (relay.limits.max-request-bytes)")
                                    .with("limit", properties.maxRequestBytes());
                        }
                        // A body of unknown length is held to the limit as it is read.
                        long weight = Math.max(0, length);
                        if (request.getAttribute(BoundedRequestBodies.GZIPPED) != null) {
                            weight =
                                    Math.min(
                                            properties.maxRequestBytes(),
                                            weight * BoundedRequestBodies.INFLATION);
                        }
                        if (weight == 0) {
                            return true;
                        }
                        // One body larger than the budget may still run, but alone.
                        long charged = Math.min(weight, budget);
                        long after = inFlight.addAndGet(charged);
                        if (after > budget && after != charged) {
                            inFlight.addAndGet(-charged);
                            RelayException refused =
                                    CommonProblems.OVERLOADED
                                            .exception(
                                                    "request bodies in flight would reach "
                                                            + after
                                                            + " bytes, above the limit of "
                                                            + budget
                                                            + " (relay.limits.max-in-flight-"
                                                            + "request-bytes); retry shortly")
                                            .with("limit", budget);
                            refused.getHeaders().set("Retry-After", "1");
                            throw refused;
                        }
                        request.setAttribute(ADMITTED, charged);
                        return true;
                    }

                    @Override
                    public void afterCompletion(
                            HttpServletRequest request,
                            HttpServletResponse response,
                            Object handler,
                            Exception ex) {
                        if (request.getAttribute(ADMITTED) instanceof Long charged) {
                            request.removeAttribute(ADMITTED);
                            inFlight.addAndGet(-charged);
                        }
                    }
                });
    }
}
