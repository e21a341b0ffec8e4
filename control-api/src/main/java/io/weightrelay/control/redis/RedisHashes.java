package io.weightrelay.control.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.springframework.data.redis.core.HashOperations;
import org.springframework.data.redis.core.RedisOperations;
import org.springframework.data.redis.core.SessionCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

/** Reads of several Redis hashes at once. */
public final class RedisHashes {

    private RedisHashes() {}

    /**
     * Every field of each hash in {@code keys}, in one pipelined round trip, in the order of the
     * keys; a hash that does not exist reads as an empty map. Not guarded: call it inside {@link
     * RedisGuard#call}.
     */
    public static List<Map<Object, Object>> entries(StringRedisTemplate redis, List<String> keys) {
        List<Object> replies =
                pipelined(
                        redis,
                        hashes -> {
                            for (String key : keys) {
                                hashes.entries(key);
                            }
                        });
        List<Map<Object, Object>> out = new ArrayList<>(replies.size());
        for (Object reply : replies) {
            @SuppressWarnings("unchecked")
            Map<Object, Object> hash = reply == null ? Map.of() : (Map<Object, Object>) reply;
            out.add(hash);
        }
        return out;
    }

    /**
     * The values of {@code fields} of each hash in {@code keys}, in one pipelined round trip, in
     * the order of the keys and fields; a missing field (or hash) reads as null. Not guarded: call
     * it inside {@link RedisGuard#call}.
     */
    public static List<List<Object>> fields(
            StringRedisTemplate redis, List<String> keys, List<String> fields) {
        List<Object> wanted = List.copyOf(fields);
        List<Object> replies =
                pipelined(
                        redis,
                        hashes -> {
                            for (String key : keys) {
                                hashes.multiGet(key, wanted);
                            }
                        });
        List<List<Object>> out = new ArrayList<>(replies.size());
        for (Object reply : replies) {
            @SuppressWarnings("unchecked")
            List<Object> values = (List<Object>) reply;
            out.add(values);
        }
        return out;
    }

    /** The replies of the hash commands {@code commands} queues, sent in one pipeline. */
    private static List<Object> pipelined(
            StringRedisTemplate redis, Consumer<HashOperations<String, Object, Object>> commands) {
        return redis.executePipelined(
                new SessionCallback<Object>() {
                    @Override
                    @SuppressWarnings("unchecked")
                    public <K, V> Object execute(RedisOperations<K, V> operations) {
                        // a StringRedisTemplate's keys are strings
                        commands.accept(
                                (HashOperations<String, Object, Object>)
                                        (HashOperations<?, ?, ?>) operations.opsForHash());
                        return null;
                    }
                });
    }
}
