package io.weightrelay.control.web;

import io.weightrelay.service.problem.CommonProblems;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Refuses request bodies above {@code relay.limits.max-request-bytes} with 413 before anything
 * reads them. The body itself is still bounded by the contract's item limits.
 */
@Configuration(proxyBeanMethods = false)
class RequestLimits implements WebMvcConfigurer {

    private final RequestLimitProperties properties;

    RequestLimits(RequestLimitProperties properties) {
        this.properties = properties;
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
                            throw CommonProblems.PAYLOAD_TOO_LARGE.exception(
                                    "request body of "
                                            + length
                                            + " bytes exceeds the limit of "
                                            + properties.maxRequestBytes());
                        }
                        return true;
                    }
                });
    }
}
