package io.weightrelay.service.problem;

import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurationPackages;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ClassPathScanningCandidateComponentProvider;
import org.springframework.core.type.filter.AssignableTypeFilter;
import org.springframework.util.ClassUtils;

/**
 * Refuses to start a service one of whose problem kinds has no row in {@link ProblemCatalog}, so a
 * kind added without its status and title fails the service's first test, not its first error. It
 * looks at the {@link ProblemKind.Catalogued} enums of the application's packages and of this one.
 */
@AutoConfiguration
public class ProblemAutoConfiguration {

    @Bean
    SmartInitializingSingleton problemKindsHaveRows(BeanFactory beans) {
        List<String> packages = new ArrayList<>();
        packages.add(ProblemKind.class.getPackageName());
        if (AutoConfigurationPackages.has(beans)) {
            packages.addAll(AutoConfigurationPackages.get(beans));
        }
        return () -> verifyAll(packages);
    }

    /** Checks every {@link ProblemKind.Catalogued} enum below {@code packages}. */
    static void verifyAll(List<String> packages) {
        ClassPathScanningCandidateComponentProvider scanner =
                new ClassPathScanningCandidateComponentProvider(false);
        scanner.addIncludeFilter(new AssignableTypeFilter(ProblemKind.Catalogued.class));
        ClassLoader loader = ProblemAutoConfiguration.class.getClassLoader();
        for (String base : packages) {
            for (var candidate : scanner.findCandidateComponents(base)) {
                Class<?> type = ClassUtils.resolveClassName(candidate.getBeanClassName(), loader);
                for (Object kind : type.getEnumConstants()) {
                    ProblemCatalog.kind(((ProblemKind) kind).slug());
                }
            }
        }
    }
}
