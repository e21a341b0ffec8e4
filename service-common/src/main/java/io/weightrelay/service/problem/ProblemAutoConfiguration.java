package io.weightrelay.service.problem;

import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ClassPathScanningCandidateComponentProvider;
import org.springframework.core.type.filter.AssignableTypeFilter;
import org.springframework.util.ClassUtils;

/**
 * Refuses to start a service one of whose problem kinds has no row in {@link ProblemCatalog}, so a
 * kind added without its status and title fails the service's first test, not its first error.
 */
@AutoConfiguration
public class ProblemAutoConfiguration {

    /** Where the services' {@link ProblemKind.Catalogued} enums live. */
    static final String PACKAGE = "io.weightrelay";

    @Bean
    SmartInitializingSingleton problemKindsHaveRows() {
        return ProblemAutoConfiguration::verifyAll;
    }

    /** Checks every {@link ProblemKind.Catalogued} enum below {@link #PACKAGE}. */
    static void verifyAll() {
        ClassPathScanningCandidateComponentProvider scanner =
                new ClassPathScanningCandidateComponentProvider(false);
        scanner.addIncludeFilter(new AssignableTypeFilter(ProblemKind.Catalogued.class));
        ClassLoader loader = ProblemAutoConfiguration.class.getClassLoader();
        for (var candidate : scanner.findCandidateComponents(PACKAGE)) {
            Class<?> type = ClassUtils.resolveClassName(candidate.getBeanClassName(), loader);
            for (Object kind : type.getEnumConstants()) {
                ProblemCatalog.kind(((ProblemKind) kind).slug());
            }
        }
    }
}
