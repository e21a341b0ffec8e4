package io.weightrelay.control.generation;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.concurrent.FutureResults;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.springframework.stereotype.Component;

/**
 * The in-memory forms of manifests control-api serves (encoded, gzipped, decoded, the JSON view of
 * a generation, its #3187 export), bounded in bytes ({@code relay.generations.manifest-cache}), the
 * least recently used first out. A Kimi-K2 manifest encodes to 12 MB and decodes to several times
 * that, so a count of entries is no bound. Each form is computed once per key: concurrent readers
 * of a key (every loader of a group at prepare) wait for the one computing it, outside the lock, so
 * computing one form may read another. Forms of a collected generation, and of a manifest no
 * generation uses any more, are dropped at once ({@link #evictGeneration}, {@link #evictManifest}),
 * not only when the bound needs room. Thread safe.
 */
@Component
final class ManifestCache {

    /** The forms kept; a generation's own ones (its view, its export) name the generation. */
    enum Form {
        ENCODED,
        GZIPPED,
        DECODED,
        VIEW,
        MOONCAKE_3187
    }

    /** A cached form; {@code generation} is -1 for the forms shared by every generation. */
    record Key(String model, String digest, long generation, Form form) {
        static Key of(String model, String digest, Form form) {
            return new Key(model, digest, -1, form);
        }
    }

    private static final class Entry {
        final CompletableFuture<Object> value = new CompletableFuture<>();
        long bytes = -1; // -1 while computing
    }

    private final long maxBytes;
    private final Map<Key, Entry> entries = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;

    ManifestCache(GenerationProperties properties) {
        this.maxBytes = properties.manifestCache().toBytes();
    }

    /**
     * The cached form under {@code key}, computed by {@code compute} when absent and weighed by
     * {@code weight} (its bytes in memory, estimated). A failed computation is not kept.
     */
    @SuppressWarnings("unchecked")
    <T> T get(Key key, Supplier<T> compute, ToLongFunction<T> weight) {
        Entry entry;
        boolean mine = false;
        synchronized (this) {
            entry = entries.get(key);
            if (entry == null) {
                entry = new Entry();
                entries.put(key, entry);
                mine = true;
            }
        }
        if (!mine) {
            return (T) FutureResults.join(entry.value);
        }
        T value;
        try {
            value = compute.get();
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                entries.remove(key, entry);
            }
            entry.value.completeExceptionally(e);
            throw e;
        }
        entry.value.complete(value);
        synchronized (this) {
            if (entries.get(key) == entry) {
                entry.bytes = Math.max(0, weight.applyAsLong(value));
                bytes += entry.bytes;
                trim();
            }
        }
        return value;
    }

    /** Drops the forms of one generation (collected, aborted, lost). */
    void evictGeneration(GenerationId id) {
        evictIf(k -> k.model().equals(id.model()) && k.generation() == id.generation());
    }

    /** Drops every form of a manifest no generation of the model uses any more. */
    void evictManifest(String model, String digest) {
        evictIf(k -> k.model().equals(model) && k.digest().equals(digest));
    }

    synchronized void evictIf(Predicate<Key> which) {
        for (Iterator<Map.Entry<Key, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Key, Entry> e = it.next();
            if (which.test(e.getKey())) {
                forget(e.getValue());
                it.remove();
            }
        }
    }

    /** Bytes held by the computed forms. */
    synchronized long bytes() {
        return bytes;
    }

    /** How many forms of {@code model} are kept or being computed. */
    synchronized long entries(String model) {
        return entries.keySet().stream().filter(k -> k.model().equals(model)).count();
    }

    long maxBytes() {
        return maxBytes;
    }

    /** Least recently used first, never one still being computed. */
    private void trim() {
        for (Iterator<Entry> it = entries.values().iterator(); bytes > maxBytes && it.hasNext(); ) {
            Entry e = it.next();
            if (e.bytes >= 0) {
                forget(e);
                it.remove();
            }
        }
    }

    private void forget(Entry e) {
        if (e.bytes > 0) {
            bytes -= e.bytes;
        }
        e.bytes = -2; // weighed no more, should its computation still end
    }
}
