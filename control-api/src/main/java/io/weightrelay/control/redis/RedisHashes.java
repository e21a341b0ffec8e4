package io.weightrelay.control.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
                redis.executePipelined(
                        new SessionCallback<Object>() {
                            @Override
                            @SuppressWarnings("unchecked")
                            public <K, V> Object execute(RedisOperations<K, V> operations) {
                                for (String key : keys) {
                                    operations.opsForHash().entries((K) key);
                                }
                                return null;
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
        List<Object> replies =
                redis.executePipelined(
                        new SessionCallback<Object>() {
                            @Override
                            @SuppressWarnings("unchecked")
                            public <K, V> Object execute(RedisOperations<K, V> operations) {
                                HashOperations<K, Object, Object> hashes = operations.opsForHash();
                                List<Object> wanted = List.copyOf(fields);
                                for (String key : keys) {
                                    hashes.multiGet((K) key, wanted);
                                }
                                return null;
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
}
