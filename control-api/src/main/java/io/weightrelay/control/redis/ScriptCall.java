package io.weightrelay.control.redis;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.DefaultRedisScript;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.stereotype.Component;

/**
 * Runs the Lua scripts under {@code scripts/} by name (each loaded once), every call under the
 * {@link RedisGuard}. Every script answers a list whose first item is a code; a caller switches on
 * {@link Reply#code()} and turns every code it does not know into {@link Reply#unexpected()}.
 */
@Component
public class ScriptCall {

    /** A script's answer: a code, then items that depend on the code. */
    public record Reply(String script, List<Object> values) {

        public String code() {
            return String.valueOf(values.get(0));
        }

        public boolean is(String code) {
            return code.equals(code());
        }

        public int size() {
            return values.size();
        }

        public String item(int index) {
            return String.valueOf(values.get(index));
        }

        public long number(int index) {
            return Long.parseLong(item(index));
        }

        /** The items from {@code from} on, as strings. */
        public List<String> items(int from) {
            return values.subList(from, values.size()).stream().map(String::valueOf).toList();
        }

        /** The problem for a code its caller does not handle: a script and its caller disagree. */
        public RelayException unexpected() {
            return CommonProblems.INTERNAL.exception(
                    script + " script answered unexpectedly: " + values);
        }
    }

    /** A script line that stands for a library under {@code scripts/lib/}. */
    private static final String INCLUDE = "--@include ";

    private final StringRedisTemplate redis;
    private final RedisGuard guard;
    private final Map<String, RedisScript<List<Object>>> loaded = new ConcurrentHashMap<>();

    public ScriptCall(StringRedisTemplate redis, RedisGuard guard) {
        this.redis = redis;
        this.guard = guard;
    }

    /**
     * {@code scripts/<name>.lua}, answering a list. Its text is read once: a script made from its
     * location would ask the resource whether it changed on every call (a lookup in the nested jar,
     * on every request that runs a script). A line {@code --@include <lib>} stands for {@code
     * scripts/lib/<lib>.lua}: a rule several scripts apply (Redis gives a script no way to load
     * another) is written once and put where each script says.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static RedisScript<List<Object>> load(String name) {
        String text =
                read(name)
                        .lines()
                        .map(
                                line ->
                                        line.startsWith(INCLUDE)
                                                ? read(
                                                        "lib/"
                                                                + line.substring(INCLUDE.length())
                                                                        .strip())
                                                : line + "\n")
                        .collect(Collectors.joining());
        DefaultRedisScript<List> script = new DefaultRedisScript<>(text, List.class);
        return (RedisScript<List<Object>>) (RedisScript) script;
    }

    private static String read(String name) {
        try {
            return new ClassPathResource("scripts/" + name + ".lua")
                    .getContentAsString(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read scripts/" + name + ".lua", e);
        }
    }

    /** Runs {@code scripts/<script>.lua}. */
    public Reply run(String script, List<String> keys, List<String> args) {
        RedisScript<List<Object>> lua = loaded.computeIfAbsent(script, ScriptCall::load);
        Object[] argv = args.toArray();
        List<Object> values = guard.call(() -> redis.execute(lua, keys, argv));
        if (values == null || values.isEmpty()) {
            throw CommonProblems.INTERNAL.exception(script + " script answered nothing");
        }
        return new Reply(script, values);
    }

    public Reply run(String script, List<String> keys, String... args) {
        return run(script, keys, Arrays.asList(args));
    }
}
