package io.weightrelay.service.security;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.ConstructorBinding;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Bearer tokens per role, for example {@code relay.security.tokens.trainer[0]=...}, and tokens
 * bound to one identity ({@code relay.security.bound[0].role=loader}, {@code .identity=inst-0},
 * {@code .token=...}). Several tokens per role allow rotation. Tokens shorter than {@link
 * #MIN_TOKEN_LENGTH} are refused at start-up so a placeholder never guards a real deployment, and
 * so is one token given to two callers (two roles, a role and a bound identity, two identities).
 *
 * @param enabled false only for local experiments on loopback: every request then passes as an
 *     operator; refused at start-up unless {@code server.address} is a loopback address
 * @param tokens tokens of each role, valid for any identity
 * @param bound tokens valid for one identity only
 */
@Validated
@ConfigurationProperties("relay.security")
public record RoleTokenProperties(
        @DefaultValue("true") boolean enabled,
        Map<Role, List<String>> tokens,
        List<BoundToken> bound) {

    public static final int MIN_TOKEN_LENGTH = 16;

    @ConstructorBinding
    public RoleTokenProperties {
        tokens = tokens == null ? Map.of() : Map.copyOf(tokens);
        bound = bound == null ? List.of() : List.copyOf(bound);
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
        for (int i = 0; i < bound.size(); i++) {
            BoundToken b = bound.get(i);
            if (b.role() == null || b.identity() == null || b.identity().isBlank()) {
                throw new IllegalArgumentException(
                        "relay.security.bound[" + i + "] needs a role and an identity");
            }
            if (b.token() == null || b.token().length() < MIN_TOKEN_LENGTH) {
                throw new IllegalArgumentException(
                        "relay.security.bound["
                                + i
                                + "] holds a token shorter than "
                                + MIN_TOKEN_LENGTH
                                + " characters");
            }
        }
        refuseSharedTokens(tokens, bound);
    }

    /**
     * Refuses a token that two entries give to different callers (two roles, a role and a bound
     * identity, two identities): which one it authenticates as would depend on the order the
     * entries were read in. The message names both entries and their roles, never the token. The
     * same token listed twice for one caller is only redundant and passes.
     */
    private static void refuseSharedTokens(Map<Role, List<String>> tokens, List<BoundToken> bound) {
        record Holder(String entry, Role role, String identity) {}
        Map<String, Holder> seen = new HashMap<>();
        List<Holder> holders = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (Role role : Role.values()) {
            List<String> list = tokens.getOrDefault(role, List.of());
            for (int i = 0; i < list.size(); i++) {
                holders.add(
                        new Holder(
                                "relay.security.tokens." + role.configName() + "[" + i + "]",
                                role,
                                null));
                values.add(list.get(i));
            }
        }
        for (int i = 0; i < bound.size(); i++) {
            BoundToken b = bound.get(i);
            holders.add(
                    new Holder(
                            "relay.security.bound["
                                    + i
                                    + "] ("
                                    + b.role().configName()
                                    + " bound to '"
                                    + b.identity()
                                    + "')",
                            b.role(),
                            b.identity()));
            values.add(b.token());
        }
        for (int i = 0; i < holders.size(); i++) {
            Holder holder = holders.get(i);
            Holder first = seen.putIfAbsent(values.get(i), holder);
            if (first != null
                    && (first.role() != holder.role()
                            || !Objects.equals(first.identity(), holder.identity()))) {
                throw new IllegalArgumentException(
                        first.entry()
                                + " and "
                                + holder.entry()
                                + " hold the same token (roles "
                                + first.role().configName()
                                + " and "
                                + holder.role().configName()
                                + "): a token must name one caller, so give each role and each"
                                + " bound identity a token of its own");
            }
        }
    }

    public RoleTokenProperties(boolean enabled, Map<Role, List<String>> tokens) {
        this(enabled, tokens, List.of());
    }

    /** Every configured token, bound or not (to check that none reaches a log). */
    public List<String> allTokens() {
        List<String> all = new ArrayList<>();
        tokens.values().forEach(all::addAll);
        bound.forEach(b -> all.add(b.token()));
        return all;
    }

    @Override
    public String toString() {
        return "RoleTokenProperties[enabled="
                + enabled
                + ", roles="
                + tokens.keySet()
                + ", bound="
                + bound
                + "]";
    }
}
