package io.weightrelay.control.generation;

import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.control.model.GenerationManifest;
import io.weightrelay.control.generation.ManifestCache.Form;
import io.weightrelay.control.generation.ManifestCache.Key;
import io.weightrelay.control.redis.Compression;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.store.ObjectStore;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.CommonProblems;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * Manifests, stored once per digest (the trainer's JSON, reshard's binary encoding and a hash of
 * expected fragment sizes) and shared by every generation that publishes the same model layout.
 * Manifests are immutable, so every form is cached in memory after its first read ({@link
 * ManifestCache}, bounded in bytes).
 */
@Service
public class ManifestStore {

    static final int CHUNK = 10_000;
    // Heap estimates: a decoded fragment or tensor is a few small records, strings and arrays; a
    // fragment of the JSON view also boxes its offsets and shape.
    private static final long DECODED_BYTES_PER_ENTRY = 256;
    private static final long VIEW_BYTES_PER_FRAGMENT = 512;

    private final StringRedisTemplate redis;
    private final RedisTemplate<String, byte[]> bytes;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final JsonMapper json;
    private final GenerationQueries generations;
    private final ObjectStore store;
    // Every form as served (encoded, gzipped, decoded, the JSON view), bounded in bytes: every
    // publisher and loader of a generation reads the same bytes, so they are read from Redis and
    // inflated once (per key, concurrent readers wait); a Kimi-K2 manifest is 12 MB encoded and
    // about 1 MB gzipped, and every loader of a group reads it at prepare, all at once.
    private final ManifestCache cache;

    ManifestStore(
            StringRedisTemplate redis,
            RedisTemplate<String, byte[]> bytesRedisTemplate,
            RedisKeys keys,
            RedisGuard guard,
            JsonMapper json,
            GenerationQueries generations,
            ObjectStore store,
            ManifestCache cache) {
        this.redis = redis;
        this.bytes = bytesRedisTemplate;
        this.keys = keys;
        this.guard = guard;
        this.json = json;
        this.generations = generations;
        this.store = store;
        this.cache = cache;
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
        String manifestJson = StoredManifest.of(manifest).write(json);
        guard.run(() -> redis.opsForValue().set(keys.manifest(model, digest), manifestJson));
        byte[] encoded = source.encode();
        byte[] deflated = Compression.deflate(encoded);
        guard.run(() -> bytes.opsForValue().set(keys.manifestEncoded(model, digest), deflated));
        cache.get(Key.of(model, digest, Form.ENCODED), () -> encoded, b -> b.length);
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

    public GenerationManifest manifest(GenerationId id) {
        StoredGeneration g = generations.load(id);
        return cache.get(
                new Key(id.model(), g.manifestDigest(), id.generation(), Form.VIEW),
                () -> manifestView(id, g),
                view -> VIEW_BYTES_PER_FRAGMENT * view.getFragments().size());
    }

    private GenerationManifest manifestView(GenerationId id, StoredGeneration g) {
        SourceManifest api = apiManifest(id.model(), g.manifestDigest());
        io.weightrelay.reshard.manifest.SourceManifest source = sourceManifest(id.model(), g);
        List<StoredFragment> fragments = new ArrayList<>(source.fragments().size());
        for (io.weightrelay.reshard.manifest.StoredFragment f : source.fragments()) {
            fragments.add(
                    new StoredFragment(
                            id.objectKey(f.fragment()),
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
    public byte[] encodedManifest(GenerationId id) {
        return encoded(id.model(), generations.load(id).manifestDigest());
    }

    /** {@link #encodedManifest} as one gzip member, compressed once per manifest. */
    public byte[] gzippedManifest(GenerationId id) {
        String digest = generations.load(id).manifestDigest();
        return cache.get(
                Key.of(id.model(), digest, Form.GZIPPED),
                () -> Compression.gzip(encoded(id.model(), digest)),
                b -> b.length);
    }

    private byte[] encoded(String model, String digest) {
        return cache.get(
                Key.of(model, digest, Form.ENCODED),
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
                },
                b -> b.length);
    }

    /**
     * The planner's view of a generation's manifest (cached per digest: manifests are immutable).
     */
    public io.weightrelay.reshard.manifest.SourceManifest sourceManifest(
            String model, StoredGeneration generation) {
        String digest = generation.manifestDigest();
        return cache.get(
                Key.of(model, digest, Form.DECODED),
                () -> io.weightrelay.reshard.manifest.SourceManifest.decode(encoded(model, digest)),
                ManifestStore::decodedBytes);
    }

    /** Keeps a decoded manifest the planner will ask for (decoding it again costs seconds). */
    void remember(
            String model, String digest, io.weightrelay.reshard.manifest.SourceManifest source) {
        cache.get(Key.of(model, digest, Form.DECODED), () -> source, ManifestStore::decodedBytes);
    }

    /** What a decoded manifest takes on the heap, about: its records, strings and arrays. */
    private static long decodedBytes(io.weightrelay.reshard.manifest.SourceManifest source) {
        return DECODED_BYTES_PER_ENTRY * (source.fragments().size() + source.tensors().size());
    }

    /**
     * Forgets the in-memory forms of a generation that was collected, and those of its manifest
     * when no generation of the model uses it any more.
     */
    void forget(GenerationId id, String digest, boolean manifestRemoved) {
        cache.evictGeneration(id);
        if (manifestRemoved) {
            cache.evictManifest(id.model(), digest);
        }
    }

    /** Bytes the in-memory forms of manifests take (estimated for decoded ones and views). */
    long cachedBytes() {
        return cache.bytes();
    }

    /** How many in-memory forms of {@code model}'s manifests are kept. */
    long cachedEntries(String model) {
        return cache.entries(model);
    }

    /** Store keys of every manifest object of a generation. */
    public List<String> objectKeys(GenerationId id, String manifestDigest) {
        Set<Object> fragments =
                guard.call(
                        () ->
                                redis.opsForHash()
                                        .keys(keys.manifestSizes(id.model(), manifestDigest)));
        List<String> out = new ArrayList<>(fragments.size());
        for (Object f : fragments) {
            out.add(id.objectKey((String) f));
        }
        Collections.sort(out);
        return out;
    }

    /**
     * Removes every manifest object of a generation from the store; returns how many were there.
     */
    long removeObjects(GenerationId id, String manifestDigest) {
        return store.remove(objectKeys(id, manifestDigest));
    }

    /** The source manifest of a generation as the trainer sent it (a checkpoint keeps it). */
    public SourceManifest apiManifest(GenerationId id) {
        return apiManifest(id.model(), generations.load(id).manifestDigest());
    }

    private SourceManifest apiManifest(String model, String digest) {
        String key = keys.manifest(model, digest);
        String manifestJson = guard.call(() -> redis.opsForValue().get(key));
        if (manifestJson == null) {
            throw CommonProblems.INTERNAL.exception(
                    "manifest " + digest + " of model " + model + " is missing from Redis");
        }
        return StoredManifest.read(json, key, manifestJson).toApi();
    }

    private static List<Long> boxed(long[] values) {
        List<Long> out = new ArrayList<>(values.length);
        for (long v : values) {
            out.add(v);
        }
        return out;
    }
}
