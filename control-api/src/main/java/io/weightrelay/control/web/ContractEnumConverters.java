package io.weightrelay.control.web;

import io.weightrelay.api.control.model.BarrierName;
import io.weightrelay.api.control.model.GenerationState;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.convert.converter.Converter;
import org.springframework.format.FormatterRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Path and query enums are spelled as the contract spells them ({@code post-applied}), not as Java
 * constants; an unknown value fails conversion and is answered 400.
 */
@Configuration(proxyBeanMethods = false)
class ContractEnumConverters implements WebMvcConfigurer {

    @Override
    public void addFormatters(FormatterRegistry registry) {
        registry.addConverter(
                new Converter<String, BarrierName>() {
                    @Override
                    public BarrierName convert(String source) {
                        return BarrierName.fromValue(source);
                    }
                });
        registry.addConverter(
                new Converter<String, GenerationState>() {
                    @Override
                    public GenerationState convert(String source) {
                        return GenerationState.fromValue(source);
                    }
                });
    }
}
