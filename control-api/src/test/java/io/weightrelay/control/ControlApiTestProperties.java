package io.weightrelay.control;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.test.context.TestPropertySource;

/**
 * What every control-api a test starts is configured with: the role tokens {@link
 * ControlApiClientSupport} sends, no scheduled garbage collection (a test collects when it means
 * to) and no plan resolved in the background after loaders register (one test's would land in the
 * next one's plan counts; {@code EagerPlansAtRegistrationTest} turns it on). A test adds its own
 * properties with {@code @SpringBootTest(properties = ...)}.
 */
@Documented
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@TestPropertySource(
        properties = {
            "relay.security.tokens.trainer[0]=" + ControlApiClientSupport.TRAINER,
            "relay.security.tokens.loader[0]=" + ControlApiClientSupport.LOADER,
            "relay.security.tokens.operator[0]=" + ControlApiClientSupport.OPERATOR,
            "relay.generations.scheduled-gc=false",
            "relay.plans.eager-settle=0s"
        })
public @interface ControlApiTestProperties {}
