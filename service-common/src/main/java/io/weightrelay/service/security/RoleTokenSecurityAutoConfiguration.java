package io.weightrelay.service.security;

import io.weightrelay.service.dataplane.Hosts;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Registers {@link RoleTokenFilter} in front of everything else once the service declares its
 * {@link AccessPolicy}. {@code relay.security.enabled=false} is refused unless the service binds
 * only a loopback address ({@code server.address}), and is logged as a warning.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnBean(AccessPolicy.class)
@EnableConfigurationProperties(RoleTokenProperties.class)
public class RoleTokenSecurityAutoConfiguration {

    /** Runs right after the request-context filters, before Spring MVC and actuator. */
    public static final int FILTER_ORDER = Ordered.HIGHEST_PRECEDENCE + 10;

    private static final Logger log =
            LoggerFactory.getLogger(RoleTokenSecurityAutoConfiguration.class);

    @Bean
    FilterRegistrationBean<RoleTokenFilter> roleTokenFilter(
            AccessPolicy policy, RoleTokenProperties properties, Environment environment) {
        checkDisabledOnlyOnLoopback(properties, environment.getProperty("server.address"));
        FilterRegistrationBean<RoleTokenFilter> registration =
                new FilterRegistrationBean<>(new RoleTokenFilter(policy, properties));
        registration.setOrder(FILTER_ORDER);
        registration.addUrlPatterns("/*");
        registration.setName("roleTokenFilter");
        return registration;
    }

    /**
     * Refuses {@code relay.security.enabled=false} on a service reachable from other hosts (no
     * {@code server.address}, a wildcard or a routable one) and warns when it is allowed.
     */
    static void checkDisabledOnlyOnLoopback(RoleTokenProperties properties, String serverAddress) {
        if (properties.enabled()) {
            return;
        }
        if (serverAddress == null || serverAddress.isBlank() || !Hosts.isLoopback(serverAddress)) {
            throw new IllegalStateException(
                    "relay.security.enabled=false is refused: server.address="
                            + (serverAddress == null || serverAddress.isBlank()
                                    ? "<every interface>"
                                    : serverAddress)
                            + " is not a loopback address, and without security every caller is"
                            + " an operator; bind server.address=127.0.0.1 or configure"
                            + " relay.security.tokens");
        }
        log.warn(
                "relay.security.enabled=false: every request to this service passes as an operator"
                        + " without a token (allowed only because server.address={} is loopback)",
                serverAddress);
    }
}
