package io.weightrelay.lab;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.RunRedis;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The flags of the lab's mains ({@code --name value} or {@code --name=value}); repeated flags keep
 * every value. {@code ./relay} checks them first and hands on only those given, so each main's
 * defaults are its own.
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

    public boolean has(String name) {
        return values.containsKey(name);
    }

    public List<String> all(String name) {
        return values.getOrDefault(name, List.of());
    }

    /** {@code --seed}: the seed of the deterministic weights; default 1. */
    public long seed() {
        return getLong("seed", 1);
    }

    /**
     * {@code --redis-host}: the Redis the lab's services use; default the lab's ({@link
     * RunRedis#configured()}: the one {@code ./relay} chose, else 127.0.0.1).
     */
    public String redisHost() {
        return get("redis-host", RunRedis.configured().host());
    }

    /** {@code --redis-port}: default the lab's, as {@link #redisHost()} (else 6379). */
    public int redisPort() {
        return getInt("redis-port", RunRedis.configured().port());
    }

    /** {@code --mode}: how the rollout workers hold their weights; default compat. */
    public Mode mode() {
        return Mode.parse(get("mode", "compat"));
    }

    /**
     * {@code --root}: the checkout whose service jars run; default {@link ServiceProcess#home()}.
     */
    public Path root() {
        return Path.of(get("root", ServiceProcess.home().toString())).toAbsolutePath();
    }

    /**
     * {@code --redis-host}, {@code --redis-port} and {@code --root}: where a lab's services run.
     */
    public LabCluster.Site site() {
        return new LabCluster.Site(redisHost(), redisPort(), root());
    }

    /**
     * {@code --<flag>}: a service jar given explicitly, else {@code module}'s jar built under
     * {@code root}.
     */
    public Path jar(String flag, Path root, String module) {
        return has(flag) ? Path.of(get(flag, null)) : ServiceProcess.findJar(root, module);
    }
}
