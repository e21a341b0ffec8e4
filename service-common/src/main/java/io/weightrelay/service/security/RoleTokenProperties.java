package io.weightrelay.service.security;

import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Bearer tokens per role, for example {@code relay.security.tokens.trainer[0]=...}. Several tokens
 * per role allow rotation. Tokens shorter than {@link #MIN_TOKEN_LENGTH} are refused at start-up so
 * a placeholder never guards a real deployment.
 *
 * @param enabled false only for local experiments: every request then passes as an operator
 * @param tokens tokens of each role
 */
@Validated
@ConfigurationProperties("relay.security")
public record RoleTokenProperties(
        @DefaultValue("true") boolean enabled, Map<Role, List<String>> tokens) {

    public static final int MIN_TOKEN_LENGTH = 16;

    public RoleTokenProperties {
        tokens = tokens == null ? Map.of() : Map.copyOf(tokens);
        tokens.forEach(
                (role, list) -> {
                    for (String token : list) {
                        if (token == null || token.length() < MIN_TOKEN_LENGTH) {
                            throw new IllegalArgumentException(
                                    "relay.security.tokens."
                                            + role.configName()
                                            + " holds a token shorter than "
                                            + MIN_TOKEN_LENGTH
                                            + " characters");
                        }
                    }
                });
    }
}
