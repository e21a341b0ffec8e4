package io.weightrelay.lab;

import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The flags of the lab's programs that run as a JVM of their own and read text ({@code --name
 * value} or {@code --name=value}; repeated flags keep every value): the host agents and the
 * processes they start. What {@code ./relay} runs in its own JVM takes typed options instead.
 */
public final class Args {

    private final Map<String, List<String>> values = new HashMap<>();

    public Args(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + a + "'");
            }
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                value = args[++i];
            } else {
                value = "true";
            }
            values.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
        }
    }

    public String get(String name, String fallback) {
        List<String> v = values.get(name);
        return v == null ? fallback : v.get(v.size() - 1);
    }

    public long getLong(String name, long fallback) {
        String v = get(name, null);
        return v == null ? fallback : Long.parseLong(v);
    }

    public int getInt(String name, int fallback) {
        return (int) getLong(name, fallback);
    }

    public List<String> all(String name) {
        return values.getOrDefault(name, List.of());
    }

    /** {@code --seed}: the seed of the deterministic weights; default 1. */
    public long seed() {
        return getLong("seed", 1);
    }

    /** {@code --mode}: how the rollout workers hold their weights; default compat. */
    public Mode mode() {
        return Mode.parse(get("mode", "compat"));
    }
}
