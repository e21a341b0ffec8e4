package io.weightrelay.service.security;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;

/**
 * Registers {@link RoleTokenFilter} in front of everything else once the service declares its
 * {@link AccessPolicy}.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnBean(AccessPolicy.class)
@EnableConfigurationProperties(RoleTokenProperties.class)
public class RoleTokenSecurityAutoConfiguration {

    /** Runs right after the request-context filters, before Spring MVC and actuator. */
    public static final int FILTER_ORDER = Ordered.HIGHEST_PRECEDENCE + 10;

    @Bean
    FilterRegistrationBean<RoleTokenFilter> roleTokenFilter(
            AccessPolicy policy, RoleTokenProperties properties) {
        FilterRegistrationBean<RoleTokenFilter> registration =
                new FilterRegistrationBean<>(new RoleTokenFilter(policy, properties));
        registration.setOrder(FILTER_ORDER);
        registration.addUrlPatterns("/*");
        registration.setName("roleTokenFilter");
        return registration;
    }
}
