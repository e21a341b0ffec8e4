package io.weightrelay.publisher.segment;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * Directory entries that list a segment the publisher is about to create, so they describe bytes of
 * a previous incarnation of it (a killed or stopped publisher). A new segment starts with an empty
 * allocator (and, once the engine recreates files on takeover, a new file): left in the directory,
 * such an entry would hand readers whatever the new owner later writes at its offset. {@link #find}
 * lists them before the segment is created; {@link #purge} removes exactly those entries that still
 * say the same afterwards, from the directory only, never freeing anything in the new segment's
 * allocator.
 *
 * <p>Reads the object directory's documented layout ({@code <prefix>obj:<key>}, a hash whose {@code
 * replicas} field is {@code segment@offset;...}; native-dataplane README, "Store"). Sized for
 * Kimi-K2: one SCAN of the directory, its lookups pipelined a page at a time.
 */
final class StaleObjects {

    private static final int PAGE = 1000;
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String DELETE_IF_SAME =
            "if redis.call('HGET', KEYS[1], 'replicas') == ARGV[1] then "
                    + "return redis.call('DEL', KEYS[1]) end return 0";

    private StaleObjects() {}

    /** Entries listing {@code segment} now: directory key -> its replicas field. */
    static Map<String, String> find(String redisUri, String prefix, String segment) {
        String objects = prefix + "obj:";
        Map<String, String> out = new LinkedHashMap<>();
        RedisClient client = RedisClient.create(redisUri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisAsyncCommands<String, String> redis = connection.async();
            ScanArgs match = ScanArgs.Builder.matches(escape(objects) + "*").limit(PAGE);
            KeyScanCursor<String> page = await(redis.scan(match));
            while (true) {
                List<RedisFuture<String>> replicas = new ArrayList<>();
                for (String key : page.getKeys()) {
                    replicas.add(redis.hget(key, "replicas"));
                }
                awaitAll(replicas);
                for (int i = 0; i < replicas.size(); i++) {
                    String field = value(replicas.get(i));
                    if (field != null && lists(field, segment)) {
                        out.put(page.getKeys().get(i), field);
                    }
                }
                if (page.isFinished()) {
                    return out;
                }
                page = await(redis.scan(page, match));
            }
        } finally {
            close(client);
        }
    }

    /**
     * Removes the entries {@link #find} saw, each only if it still lists the same replicas (a key
     * cannot be stored again while its entry exists, so nothing stored since is touched).
     *
     * @return the object keys (without the directory prefix) whose entries were removed, sorted
     */
    static List<String> purge(String redisUri, String prefix, Map<String, String> seen) {
        if (seen.isEmpty()) {
            return List.of();
        }
        String objects = prefix + "obj:";
        TreeSet<String> removed = new TreeSet<>();
        RedisClient client = RedisClient.create(redisUri);
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisAsyncCommands<String, String> redis = connection.async();
            List<Map.Entry<String, String>> entries = new ArrayList<>(seen.entrySet());
            for (int from = 0; from < entries.size(); from += PAGE) {
                List<Map.Entry<String, String>> chunk =
                        entries.subList(from, Math.min(entries.size(), from + PAGE));
                List<RedisFuture<Long>> deleted = new ArrayList<>();
                for (Map.Entry<String, String> e : chunk) {
                    deleted.add(
                            redis.eval(
                                    DELETE_IF_SAME,
                                    ScriptOutputType.INTEGER,
                                    new String[] {e.getKey()},
                                    e.getValue()));
                }
                awaitAll(deleted);
                for (int i = 0; i < chunk.size(); i++) {
                    Long n = value(deleted.get(i));
                    if (n != null && n > 0) {
                        removed.add(chunk.get(i).getKey().substring(objects.length()));
                    }
                }
            }
        } finally {
            close(client);
        }
        return List.copyOf(removed);
    }

    /** Whether a replicas field ({@code segment@offset;...}) names {@code segment}. */
    static boolean lists(String replicas, String segment) {
        for (String r : replicas.split(";")) {
            int at = r.lastIndexOf('@');
            if (at > 0 && r.substring(0, at).equals(segment)) {
                return true;
            }
        }
        return false;
    }

    /** The {@code model/generation} of each store key ({@code {model}/{generation}/{fragment}}). */
    static List<String> generations(List<String> keys) {
        TreeSet<String> out = new TreeSet<>();
        for (String key : keys) {
            int first = key.indexOf('/');
            int second = first < 0 ? -1 : key.indexOf('/', first + 1);
            out.add(second < 0 ? key : key.substring(0, second));
        }
        return List.copyOf(out);
    }

    /** Releases the client; a slow or failed release never fails the owner's start. */
    private static void close(RedisClient client) {
        try {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        } catch (RuntimeException e) {
            // the connection is closed already; only the client's threads linger
        }
    }

    private static String escape(String literal) {
        return literal.replaceAll("([*?\\[\\]\\\\])", "\\\\$1");
    }

    private static <T> T await(RedisFuture<T> future) {
        awaitAll(List.of(future));
        return value(future);
    }

    private static <T> T value(RedisFuture<T> done) {
        try {
            return done.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading the object directory", e);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("object directory: " + e.getCause(), e.getCause());
        }
    }

    private static void awaitAll(List<? extends RedisFuture<?>> futures) {
        if (futures.isEmpty()) {
            return;
        }
        boolean done =
                LettuceFutures.awaitAll(
                        WAIT.toMillis(),
                        TimeUnit.MILLISECONDS,
                        futures.toArray(RedisFuture[]::new));
        if (!done) {
            throw new IllegalStateException("the object directory did not answer within " + WAIT);
        }
    }
}
