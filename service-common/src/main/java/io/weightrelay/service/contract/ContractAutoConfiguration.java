package io.weightrelay.service.contract;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.Nulls;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.jackson.autoconfigure.JsonMapperBuilderCustomizer;
import org.springframework.context.annotation.Bean;

/**
 * Serves the contracts to every servlet service ({@link ContractController}), and holds JSON to
 * them both ways, since no schema of the contracts is nullable: an optional member with no value is
 * left out of an answer, never sent as {@code null} (a loader that never reported a generation has
 * no {@code generation}, not {@code "generation": null}); and a {@code null} item of an array or
 * value of a map in a request body is refused while it is read (400 naming where, {@link
 * io.weightrelay.service.problem.ProblemHandler}), instead of reaching a controller as a list that
 * holds {@code null} ({@code "workers": [null]} was a {@code NullPointerException} and a 500).
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
public class ContractAutoConfiguration {

    @Bean
    ContractController contractController() {
        return new ContractController();
    }

    @Bean
    JsonMapperBuilderCustomizer noNullsEitherWay() {
        return builder ->
                builder.changeDefaultPropertyInclusion(
                                inclusion ->
                                        inclusion.withValueInclusion(JsonInclude.Include.NON_NULL))
                        .changeDefaultNullHandling(nulls -> nulls.withContentNulls(Nulls.FAIL));
    }
}
