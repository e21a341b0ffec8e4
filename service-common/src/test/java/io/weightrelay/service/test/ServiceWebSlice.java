package io.weightrelay.service.test;

import io.weightrelay.service.contract.ContractAutoConfiguration;
import io.weightrelay.service.security.AccessPolicy;
import io.weightrelay.service.security.RoleTokenSecurityAutoConfiguration;
import io.weightrelay.service.web.RequestLimitsAutoConfiguration;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.FilterType;

/**
 * A service's web layer alone, as every service serves it: its controllers with the access policy,
 * the role tokens, the request limits and the contract (what refuses a request before a controller
 * sees it, and turns an error into problem+json). The test class gives the tokens ({@code
 * relay.security.tokens.*}) and mocks the services its controllers call.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@WebMvcTest(
        includeFilters =
                @ComponentScan.Filter(
                        type = FilterType.ASSIGNABLE_TYPE,
                        classes = AccessPolicy.class))
@ImportAutoConfiguration({
    RoleTokenSecurityAutoConfiguration.class,
    RequestLimitsAutoConfiguration.class,
    ContractAutoConfiguration.class
})
public @interface ServiceWebSlice {}
