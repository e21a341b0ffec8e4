package io.weightrelay.control.web;

import io.weightrelay.api.common.model.SourceManifest;
import jakarta.validation.Path;
import jakarta.validation.TraversableResolver;
import java.lang.annotation.ElementType;
import org.springframework.boot.validation.autoconfigure.ValidationConfigurationCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Bean validation does not cascade into a manifest's tensors: at Kimi-K2 size (70,000 tensors) its
 * per-element bookkeeping took seconds of every open. The same rules are checked in one linear pass
 * by {@code ManifestMapper.checkTensors}, answered 400 {@code invalid-request} like any other
 * constraint, naming the tensor and field.
 */
@Configuration(proxyBeanMethods = false)
class ManifestTensorsChecked {

    @Bean
    ValidationConfigurationCustomizer manifestTensorsNotCascaded() {
        return configuration -> configuration.traversableResolver(new Resolver());
    }

    private static final class Resolver implements TraversableResolver {
        @Override
        public boolean isReachable(
                Object traversableObject,
                Path.Node traversableProperty,
                Class<?> rootBeanType,
                Path pathToTraversableObject,
                ElementType elementType) {
            return true;
        }

        @Override
        public boolean isCascadable(
                Object traversableObject,
                Path.Node traversableProperty,
                Class<?> rootBeanType,
                Path pathToTraversableObject,
                ElementType elementType) {
            return !(traversableObject instanceof SourceManifest
                    && "tensors".equals(traversableProperty.getName()));
        }
    }
}
