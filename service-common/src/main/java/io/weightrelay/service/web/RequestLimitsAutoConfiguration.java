package io.weightrelay.service.web;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.boot.webmvc.autoconfigure.error.ErrorMvcAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;

/**
 * The same request limits for every service ({@code relay.limits.*}): bodies bounded as they are
 * read ({@link BoundedRequestBodies}), refused above the per-request and in-flight limits ({@link
 * RequestLimits}), and errors the servlet container raises before Spring as problem+json ({@link
 * ProblemErrorReportValve}, and {@link ProblemErrorController} for its error dispatches, in place
 * of Spring Boot's JSON error body).
 */
@AutoConfiguration(before = ErrorMvcAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@EnableConfigurationProperties(RequestLimitProperties.class)
public class RequestLimitsAutoConfiguration {

    @Bean
    FilterRegistrationBean<BoundedRequestBodies> boundedRequestBodies(
            RequestLimitProperties properties) {
        FilterRegistrationBean<BoundedRequestBodies> registration =
                new FilterRegistrationBean<>(new BoundedRequestBodies(properties));
        registration.setOrder(Ordered.HIGHEST_PRECEDENCE + 20);
        return registration;
    }

    @Bean
    RequestLimits requestLimits(RequestLimitProperties properties) {
        return new RequestLimits(properties);
    }

    @Bean
    ProblemErrorController problemErrorController() {
        return new ProblemErrorController();
    }

    @Bean
    ProblemErrorReportValve.Installer problemErrorReportValve() {
        return new ProblemErrorReportValve.Installer();
    }
}
