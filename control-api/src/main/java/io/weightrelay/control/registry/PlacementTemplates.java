package io.weightrelay.control.registry;

import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.codec.Digests;
import io.weightrelay.reshard.placement.FragmentTemplate;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.stereotype.Service;

/**
 * Fragment templates, stored once per digest ({@code placement:{digest}}, the {@code
 * wr.fragments.v1} bytes, with a TTL every registration and heartbeat naming the template renews),
 * and what was already checked of them. Decoded templates and passed checks are remembered in this
 * process, bounded, so a plan resolved again reads no fragment.
 */
@Service
public class PlacementTemplates {

    /** Decoded templates kept in memory, counted in fragments. */
    static final int MAX_CACHED_FRAGMENTS = 400_000;

    /** Remembered passed checks (keys name the check, the template and the buffers). */
    static final int MAX_PASSED_CHECKS = 16_384;

    private final RedisTemplate<String, byte[]> bytes;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final RegistryProperties properties;

    private final Map<String, FragmentTemplate> decoded = new LinkedHashMap<>(64, 0.75f, true);
    private int decodedFragments;
    private final Set<String> passed =
            Collections.newSetFromMap(
                    new LinkedHashMap<>(256, 0.75f, true) {
                        @Override
                        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                            return size() > MAX_PASSED_CHECKS;
                        }
                    });

    PlacementTemplates(
            RedisTemplate<String, byte[]> bytesRedisTemplate,
            RedisKeys keys,
            RedisGuard guard,
            RegistryProperties properties) {
        this.bytes = bytesRedisTemplate;
        this.keys = keys;
        this.guard = guard;
        this.properties = properties;
    }

    /**
     * Stores an uploaded template after checking that it is one and that {@code digest} is its
     * SHA-256.
     */
    public FragmentTemplate put(String digest, byte[] body) {
        String actual = Digests.sha256Hex(body);
        if (!actual.equals(digest)) {
            throw RegistryProblems.PLACEMENT_DIGEST_MISMATCH
                    .exception(
                            "the body's SHA-256 is "
                                    + actual
                                    + ", not the digest "
                                    + digest
                                    + " it is stored under")
                    .with("expected", digest)
                    .with("given", actual);
        }
        FragmentTemplate template;
        try {
            template = FragmentTemplate.decode(body);
        } catch (CodecException ex) {
            throw RegistryProblems.INVALID_PLACEMENT
                    .exception("not a wr.fragments.v1 template: " + ex.getMessage())
                    .with("placement", digest);
        }
        store(template);
        return template;
    }

    /** Stores a template (idempotent: the key is its digest) and remembers it decoded. */
    public void store(FragmentTemplate template) {
        byte[] encoded = template.encoded();
        guard.run(
                () ->
                        bytes.opsForValue()
                                .set(
                                        keys.placement(template.digest()),
                                        encoded,
                                        properties.placementTtl()));
        remember(template);
    }

    /** The template, or null when no template of that digest is stored. */
    public FragmentTemplate find(String digest) {
        synchronized (this) {
            FragmentTemplate t = decoded.get(digest);
            if (t != null) {
                return t;
            }
        }
        byte[] stored = guard.call(() -> bytes.opsForValue().get(keys.placement(digest)));
        if (stored == null) {
            return null;
        }
        FragmentTemplate t = FragmentTemplate.decode(stored);
        remember(t);
        return t;
    }

    /** The stored encoding, or null. */
    public byte[] encoded(String digest) {
        return guard.call(() -> bytes.opsForValue().get(keys.placement(digest)));
    }

    /** The template, failing with {@code placement-template-not-found} naming the worker. */
    public FragmentTemplate require(String digest, String instance, String worker) {
        FragmentTemplate t = find(digest);
        if (t == null) {
            throw RegistryProblems.PLACEMENT_TEMPLATE_NOT_FOUND
                    .exception(
                            "instance "
                                    + instance
                                    + ", worker "
                                    + worker
                                    + ": no fragment template "
                                    + digest
                                    + " is stored")
                    .with("instanceId", instance)
                    .with("worker", worker)
                    .with("missing", java.util.List.of(digest));
        }
        return t;
    }

    private synchronized void remember(FragmentTemplate t) {
        if (t.size() > MAX_CACHED_FRAGMENTS || decoded.containsKey(t.digest())) {
            return;
        }
        decoded.put(t.digest(), t);
        decodedFragments += t.size();
        var it = decoded.entrySet().iterator();
        while (decodedFragments > MAX_CACHED_FRAGMENTS && it.hasNext()) {
            decodedFragments -= it.next().getValue().size();
            it.remove();
        }
    }

    /** Whether a check named by {@code key} already passed in this process. */
    public boolean passed(String key) {
        synchronized (passed) {
            return passed.contains(key);
        }
    }

    public void pass(String key) {
        synchronized (passed) {
            passed.add(key);
        }
    }
}
