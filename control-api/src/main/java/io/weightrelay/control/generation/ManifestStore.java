package io.weightrelay.control.generation;

import io.weightrelay.api.control.model.GenerationManifest;
import io.weightrelay.api.control.model.SourceManifest;
import io.weightrelay.api.control.model.StoredFragment;
import io.weightrelay.control.redis.Compression;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.store.ObjectStore;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.service.problem.CommonProblems;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * Manifests, stored once per digest (the trainer's JSON, reshard's binary encoding and a hash of
 * expected fragment sizes) and shared by every generation that publishes the same model layout.
 * Manifests are immutable, so every form is cached in memory after its first read.
 */
@Service
public class ManifestStore {

    static final int CHUNK = 10_000;
    private static final int MANIFEST_CACHE_MAX = 64;
    private static final int ENCODED_CACHE_MAX = 8;
    private static final int VIEW_CACHE_MAX = 4;

    private final StringRedisTemplate redis;
    private final RedisTemplate<String, byte[]> bytes;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final JsonMapper json;
    private final GenerationQueries generations;
    private final ObjectStore store;
    private final Map<String, io.weightrelay.reshard.manifest.SourceManifest> manifestCache =
            new ConcurrentHashMap<>();
    // Encoded manifests as served: every publisher and loader of a generation reads the same
    // bytes, so they are read from Redis and inflated once (per key, concurrent readers wait).
    private final Map<String, byte[]> encodedCache = new ConcurrentHashMap<>();
    // The same, gzip-compressed once for readers that accept it: a Kimi-K2 manifest is 12 MB and
    // about 1 MB compressed, and every loader of a group reads it at prepare, all at once.
    private final Map<String, byte[]> gzippedCache = new ConcurrentHashMap<>();
    // The JSON view, built once per generation (keys name the generation) for its readers.
    private final Map<String, GenerationManifest> manifestViews = new ConcurrentHashMap<>();

    ManifestStore(
            StringRedisTemplate redis,
            RedisTemplate<String, byte[]> bytesRedisTemplate,
            RedisKeys keys,
            RedisGuard guard,
            JsonMapper json,
            GenerationQueries generations,
            ObjectStore store) {
        this.redis = redis;
        this.bytes = bytesRedisTemplate;
        this.keys = keys;
        this.guard = guard;
        this.json = json;
        this.generations = generations;
        this.store = store;
    }

    /**
     * Stores a manifest under its digest unless it is there. Its sizes appear last and at once, so
     * a commit never checks against a half-written list.
     */
    void store(
            String model,
            String digest,
            SourceManifest manifest,
            io.weightrelay.reshard.manifest.SourceManifest source) {
        String sizesKey = keys.manifestSizes(model, digest);
        if (Boolean.TRUE.equals(guard.call(() -> redis.hasKey(sizesKey)))) {
            return;
        }
        String manifestJson = json.writeValueAsString(manifest);
        guard.run(() -> redis.opsForValue().set(keys.manifest(model, digest), manifestJson));
        byte[] encoded = source.encode();
        byte[] deflated = Compression.deflate(encoded);
        guard.run(() -> bytes.opsForValue().set(keys.manifestEncoded(model, digest), deflated));
        encodedCache.putIfAbsent(model + ":" + digest, encoded);
        // Sizes go to a private key first and appear under their real name in one RENAME.
        String staging = sizesKey + ":staging:" + UUID.randomUUID();
        List<io.weightrelay.reshard.manifest.StoredFragment> fragments = source.fragments();
        for (int start = 0; start < fragments.size(); start += CHUNK) {
            Map<String, String> chunk = new HashMap<>();
            for (int i = start; i < Math.min(fragments.size(), start + CHUNK); i++) {
                chunk.put(fragments.get(i).fragment(), String.valueOf(fragments.get(i).bytes()));
            }
            guard.run(() -> redis.opsForHash().putAll(staging, chunk));
        }
        guard.run(() -> redis.rename(staging, sizesKey));
    }

    public GenerationManifest manifest(String model, long generation) {
        StoredGeneration g = generations.load(model, generation);
        String cacheKey = model + ":" + generation + ":" + g.manifestDigest();
        GenerationManifest cached = manifestViews.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        if (manifestViews.size() >= VIEW_CACHE_MAX) {
            manifestViews.clear();
        }
        return manifestViews.computeIfAbsent(cacheKey, k -> manifestView(model, generation, g));
    }

    private GenerationManifest manifestView(String model, long generation, StoredGeneration g) {
        SourceManifest api = apiManifest(model, g.manifestDigest());
        io.weightrelay.reshard.manifest.SourceManifest source = sourceManifest(model, g);
        List<StoredFragment> fragments = new ArrayList<>(source.fragments().size());
        for (io.weightrelay.reshard.manifest.StoredFragment f : source.fragments()) {
            fragments.add(
                    new StoredFragment(
                            ObjectKeys.key(model, generation, f.fragment()),
                            f.tensor(),
                            boxed(f.offset().dims()),
                            boxed(f.shape().dims()),
                            f.bytes()));
        }
        return new GenerationManifest(api, g.manifestDigest(), fragments);
    }

    /**
     * A generation's manifest in reshard's binary encoding ({@link
     * io.weightrelay.reshard.manifest.SourceManifest#encode()}), as served to publishers and
     * loaders; kept in memory per digest after the first read.
     */
    public byte[] encodedManifest(String model, long generation) {
        return encoded(model, generations.load(model, generation).manifestDigest());
    }

    /** {@link #encodedManifest} as one gzip member, compressed once per manifest. */
    public byte[] gzippedManifest(String model, long generation) {
        String digest = generations.load(model, generation).manifestDigest();
        return cached(
                gzippedCache, model + ":" + digest, () -> Compression.gzip(encoded(model, digest)));
    }

    private byte[] encoded(String model, String digest) {
        return cached(
                encodedCache,
                model + ":" + digest,
                () -> {
                    byte[] deflated =
                            guard.call(
                                    () ->
                                            bytes.opsForValue()
                                                    .get(keys.manifestEncoded(model, digest)));
                    if (deflated != null) {
                        return Compression.inflate(deflated);
                    }
                    // Opened before manifests were stored encoded: encode from the JSON once.
                    return ManifestMapper.toReshard(apiManifest(model, digest)).encode();
                });
    }

    /** A bounded cache of encoded forms: emptied when full, computed once per key. */
    private static byte[] cached(Map<String, byte[]> cache, String key, Supplier<byte[]> compute) {
        byte[] cached = cache.get(key);
        if (cached != null) {
            return cached;
        }
        if (cache.size() >= ENCODED_CACHE_MAX) {
            cache.clear();
        }
        return cache.computeIfAbsent(key, k -> compute.get());
    }

    /**
     * The planner's view of a generation's manifest (cached per digest: manifests are immutable).
     */
    public io.weightrelay.reshard.manifest.SourceManifest sourceManifest(
            String model, StoredGeneration generation) {
        String cacheKey = model + ":" + generation.manifestDigest();
        io.weightrelay.reshard.manifest.SourceManifest cached = manifestCache.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        io.weightrelay.reshard.manifest.SourceManifest source =
                io.weightrelay.reshard.manifest.SourceManifest.decode(
                        encoded(model, generation.manifestDigest()));
        remember(model, generation.manifestDigest(), source);
        return source;
    }

    /** Keeps a decoded manifest the planner will ask for (decoding it again costs seconds). */
    void remember(
            String model, String digest, io.weightrelay.reshard.manifest.SourceManifest source) {
        if (manifestCache.size() >= MANIFEST_CACHE_MAX) {
            manifestCache.clear();
        }
        manifestCache.putIfAbsent(model + ":" + digest, source);
    }

    /** Store keys of every manifest object of a generation. */
    public List<String> objectKeys(String model, long generation, String manifestDigest) {
        Set<Object> fragments =
                guard.call(
                        () -> redis.opsForHash().keys(keys.manifestSizes(model, manifestDigest)));
        List<String> out = new ArrayList<>(fragments.size());
        for (Object f : fragments) {
            out.add(ObjectKeys.key(model, generation, (String) f));
        }
        Collections.sort(out);
        return out;
    }

    /**
     * Removes every manifest object of a generation from the store; returns how many were there.
     */
    long removeObjects(String model, long generation, String manifestDigest) {
        return store.remove(objectKeys(model, generation, manifestDigest));
    }

    /** The source manifest of a generation as the trainer sent it (a checkpoint keeps it). */
    public SourceManifest apiManifest(String model, long generation) {
        return apiManifest(model, generations.load(model, generation).manifestDigest());
    }

    private SourceManifest apiManifest(String model, String digest) {
        String manifestJson =
                guard.call(() -> redis.opsForValue().get(keys.manifest(model, digest)));
        if (manifestJson == null) {
            throw CommonProblems.INTERNAL.exception(
                    "manifest " + digest + " of model " + model + " is missing from Redis");
        }
        return json.readValue(manifestJson, SourceManifest.class);
    }

    private static List<Long> boxed(long[] values) {
        List<Long> out = new ArrayList<>(values.length);
        for (long v : values) {
            out.add(v);
        }
        return out;
    }
}
