package io.weightrelay.dataplane.internal;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SslOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Segment descriptors and the object directory in Redis. Keys: {@code <prefix>seg:<name>} (hash:
 * node, hostid, engine, incarnation (hex), host, port, size, shm and kind, {@code store} or {@code
 * receive}; a hash without kind, as written before receive segments existed, is store capacity; one
 * without hostid, written before host identities, is read with a null host id and used for no
 * transfer), {@code <prefix>segments} (set of names), {@code <prefix>segments-epoch} (bumped by
 * every descriptor registration), {@code <prefix>obj:<key>} (hash with size, pin and replicas).
 * Every change that must be atomic is one Lua script. Thread safe (one shared Lettuce connection).
 */
public final class Metadata implements AutoCloseable {
    private static final String PUBLISH =
            "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end "
                    + "redis.call('HSET', KEYS[1], 'size', ARGV[1], 'pin', ARGV[2], "
                    + "'replicas', ARGV[3]) return 1";
    private static final String PUBLISH_ALL =
            "for i = 1, #KEYS do if redis.call('EXISTS', KEYS[i]) == 1 then return i end end "
                    + "for i = 1, #KEYS do redis.call('HSET', KEYS[i], 'size', ARGV[3 * i - 2], "
                    + "'pin', ARGV[3 * i - 1], 'replicas', ARGV[3 * i]) end return 0";
    private static final String TAKE =
            "local v = redis.call('HGETALL', KEYS[1]) redis.call('DEL', KEYS[1]) return v";
    private static final String PUT_SEGMENT =
            "redis.call('DEL', KEYS[1]) "
                    + "redis.call('HSET', KEYS[1], 'node', ARGV[1], 'host', ARGV[2], 'port', ARGV[3], "
                    + "'size', ARGV[4], 'shm', ARGV[5], 'kind', ARGV[7], 'hostid', ARGV[8], "
                    + "'engine', ARGV[9], 'incarnation', ARGV[10]) "
                    + "redis.call('SADD', KEYS[2], ARGV[6]) redis.call('INCR', KEYS[3]) return 1";
    // An object's entry together with the segments epoch, read atomically.
    // The segments epoch (the last key), then the entry of each other key, in one atomic read.
    private static final String READ_OBJECTS =
            "local out = {redis.call('GET', KEYS[#KEYS]) or '0'} for i = 1, #KEYS - 1 do"
                    + " out[i + 1] = redis.call('HGETALL', KEYS[i]) end return out";

    /** Value of the descriptor field {@code kind} of a transfer-target-only segment. */
    public static final String KIND_RECEIVE = "receive";

    /** Value of the descriptor field {@code kind} of store capacity (also: field absent). */
    public static final String KIND_STORE = "store";

    // Deletes the listed directory entries that have a replica in segment ARGV[1]; returns their
    // keys.
    private static final String PURGE_PAGE =
            "local out = {} for i = 1, #KEYS do "
                    + "local r = redis.call('HGET', KEYS[i], 'replicas') "
                    + "if r then for part in string.gmatch(r, '[^;]+') do "
                    + "if string.match(part, '^(.*)@%-?%d+$') == ARGV[1] then "
                    + "redis.call('DEL', KEYS[i]) out[#out + 1] = KEYS[i] break end end end end "
                    + "return out";

    private static final String DROP_SEGMENT =
            "redis.call('DEL', KEYS[1]) redis.call('SREM', KEYS[2], ARGV[1]) return 1";

    private final RedisClient client;
    private static final int PAGE = 1000;
    private static final Duration WAIT = Duration.ofSeconds(60);
    private final StatefulRedisConnection<String, String> connection;
    private final RedisCommands<String, String> redis;
    private final String prefix;

    private Metadata(
            RedisClient client, StatefulRedisConnection<String, String> connection, String prefix) {
        this.client = client;
        this.connection = connection;
        this.redis = connection.sync();
        this.prefix = prefix;
    }

    /** Connects to Redis; the caller owns the result. */
    public static Metadata connect(String redisUri, String prefix, Duration timeout) {
        return connect(redisUri, prefix, timeout, null);
    }

    /**
     * Connects to Redis, over TLS when the URI is {@code rediss://}, trusting the certificate
     * authorities of {@code caCertificate} (PEM) or, when it is {@code null}, the JVM's trust
     * store.
     */
    public static Metadata connect(
            String redisUri, String prefix, Duration timeout, Path caCertificate) {
        RedisURI uri = RedisURI.create(redisUri);
        uri.setTimeout(timeout);
        RedisClient client = RedisClient.create(uri);
        if (caCertificate != null) {
            client.setOptions(
                    ClientOptions.builder()
                            .sslOptions(
                                    SslOptions.builder()
                                            .jdkSslProvider()
                                            .trustManager(caCertificate.toFile())
                                            .build())
                            .build());
        }
        try {
            return new Metadata(client, connectOnce(client), prefix);
        } catch (RuntimeException e) {
            client.shutdown(0, 2, TimeUnit.SECONDS);
            // The URI is masked (it may carry a password); the cause names what Redis answered,
            // e.g. WRONGPASS for a refused user or password.
            throw new MetadataFailure(
                    "cannot connect to Redis at "
                            + io.weightrelay.dataplane.RedisUris.mask(redisUri)
                            + ": "
                            + rootMessage(e),
                    e);
        }
    }

    /**
     * Opens the connection, once more when the first attempt failed inside Lettuce's own handshake
     * state ({@code IllegalStateException}, e.g. "RedisHandshakeHandler not registered") without
     * any answer from Redis: under load Lettuce can lose the server's refusal (WRONGPASS) that way,
     * and the second attempt reports it. A refused, unreachable or timed-out Redis fails at once,
     * as before.
     */
    private static StatefulRedisConnection<String, String> connectOnce(RedisClient client) {
        try {
            return client.connect();
        } catch (RedisException e) {
            if (!lostInHandshake(e)) {
                throw e;
            }
            return client.connect();
        }
    }

    static boolean lostInHandshake(Throwable e) {
        boolean lettuceState = false;
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof RedisCommandExecutionException) {
                return false;
            }
            lettuceState |= t instanceof IllegalStateException;
        }
        return lettuceState;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    }

    /** Unchecked failure of the metadata store; the public API maps it to its own type. */
    public static final class MetadataFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        MetadataFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    public void putSegment(SegmentDescriptor d) {
        call(
                "register segment " + d.name(),
                () ->
                        redis.eval(
                                PUT_SEGMENT,
                                ScriptOutputType.INTEGER,
                                new String[] {
                                    segmentKey(d.name()), prefix + "segments", epochKey()
                                },
                                d.nodeLabel(),
                                d.host(),
                                Integer.toString(d.port()),
                                Long.toString(d.size()),
                                d.shmPath(),
                                d.name(),
                                d.store() ? KIND_STORE : KIND_RECEIVE,
                                d.hostId(),
                                d.engineId(),
                                Long.toUnsignedString(d.incarnation(), 16)));
    }

    public void removeSegment(String name) {
        call(
                "unregister segment " + name,
                () ->
                        redis.eval(
                                DROP_SEGMENT,
                                ScriptOutputType.INTEGER,
                                new String[] {segmentKey(name), prefix + "segments"},
                                name));
    }

    public Optional<SegmentDescriptor> segment(String name) {
        return descriptor(
                name, call("read segment " + name, () -> redis.hgetall(segmentKey(name))));
    }

    /**
     * The descriptors of {@code names}, in their order (empty where none is registered), read
     * pipelined: one round trip for a loader's every cached segment, not one each.
     */
    public List<Optional<SegmentDescriptor>> segments(List<String> names) {
        RedisAsyncCommands<String, String> async = connection.async();
        List<Optional<SegmentDescriptor>> out = new ArrayList<>(names.size());
        for (int from = 0; from < names.size(); from += PAGE) {
            List<String> page = names.subList(from, Math.min(names.size(), from + PAGE));
            List<RedisFuture<Map<String, String>>> futures = new ArrayList<>(page.size());
            for (String name : page) {
                futures.add(async.hgetall(segmentKey(name)));
            }
            if (!LettuceFutures.awaitAll(
                    WAIT.toMillis(), TimeUnit.MILLISECONDS, futures.toArray(RedisFuture[]::new))) {
                throw new MetadataFailure(
                        "reading " + page.size() + " segment descriptors took over " + WAIT, null);
            }
            for (int i = 0; i < page.size(); i++) {
                try {
                    out.add(descriptor(page.get(i), futures.get(i).get()));
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new MetadataFailure("read segment " + page.get(i), e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new MetadataFailure("interrupted reading segment descriptors", e);
                }
            }
        }
        return out;
    }

    private static Optional<SegmentDescriptor> descriptor(String name, Map<String, String> h) {
        if (h == null || h.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(
                    new SegmentDescriptor(
                            name,
                            java.util.Objects.requireNonNull(h.get("node"), "node"),
                            h.get("hostid"),
                            java.util.Objects.requireNonNull(h.get("host"), "host"),
                            Integer.parseInt(h.get("port")),
                            Long.parseLong(h.get("size")),
                            java.util.Objects.requireNonNull(h.get("shm"), "shm"),
                            isStore(h.get("kind")),
                            h.get("engine"),
                            h.get("incarnation") == null
                                    ? 0
                                    : Long.parseUnsignedLong(h.get("incarnation"), 16)));
        } catch (RuntimeException e) {
            throw new MetadataFailure("unreadable descriptor of segment " + name, e);
        }
    }

    /**
     * Whether a descriptor's kind field means store capacity: absent (older writers) or "store". An
     * unknown kind is treated as not allocatable: a newer writer's segment is never filled by a
     * store that does not understand it.
     */
    static boolean isStore(String kind) {
        return kind == null || KIND_STORE.equals(kind);
    }

    /**
     * Deletes every directory entry with a replica in {@code segment}: a segment made anew holds no
     * object, so an entry that points into it is stale and would hand readers wrong bytes. One SCAN
     * of the directory, one script call per page.
     *
     * @return the object keys (without the directory prefix) whose entries were deleted, sorted
     */
    public List<String> purgeObjectsIn(String segment) {
        List<String> purged = new ArrayList<>();
        String objects = prefix + "obj:";
        io.lettuce.core.ScanCursor cursor = io.lettuce.core.ScanCursor.INITIAL;
        io.lettuce.core.ScanArgs args =
                io.lettuce.core.ScanArgs.Builder.matches(objects + "*").limit(10000);
        do {
            io.lettuce.core.ScanCursor at = cursor;
            io.lettuce.core.KeyScanCursor<String> page =
                    call("scan the directory", () -> redis.scan(at, args));
            if (!page.getKeys().isEmpty()) {
                String[] keys = page.getKeys().toArray(new String[0]);
                List<Object> deleted =
                        call(
                                "purge objects of " + segment,
                                () ->
                                        redis.eval(
                                                PURGE_PAGE, ScriptOutputType.MULTI, keys, segment));
                if (deleted != null) {
                    for (Object key : deleted) {
                        purged.add(key.toString().substring(objects.length()));
                    }
                }
            }
            cursor = page;
        } while (!cursor.isFinished());
        Collections.sort(purged);
        return purged;
    }

    /** Names of all registered segments, sorted (a deterministic fallback order for puts). */
    public List<String> segmentNames() {
        return new ArrayList<>(
                new TreeSet<>(call("list segments", () -> redis.smembers(prefix + "segments"))));
    }

    /** Publishes an object entry unless the key exists; true when this call published it. */
    public boolean publishObject(StoredObject o) {
        Long r =
                call(
                        "publish " + o.key(),
                        () ->
                                redis.eval(
                                        PUBLISH,
                                        ScriptOutputType.INTEGER,
                                        new String[] {objectKey(o.key())},
                                        Long.toString(o.size()),
                                        o.hardPin() ? "1" : "0",
                                        encode(o.replicas())));
        return r != null && r == 1L;
    }

    /**
     * Publishes every entry, or none if any key exists (one round trip).
     *
     * @return empty when all were published, else the first key that already exists
     */
    public Optional<String> publishObjects(List<StoredObject> objects) {
        if (objects.isEmpty()) {
            return Optional.empty();
        }
        String[] keys = new String[objects.size()];
        String[] args = new String[3 * objects.size()];
        for (int i = 0; i < objects.size(); i++) {
            StoredObject o = objects.get(i);
            keys[i] = objectKey(o.key());
            args[3 * i] = Long.toString(o.size());
            args[3 * i + 1] = o.hardPin() ? "1" : "0";
            args[3 * i + 2] = encode(o.replicas());
        }
        Long r =
                call(
                        "publish " + objects.size() + " objects",
                        () -> redis.eval(PUBLISH_ALL, ScriptOutputType.INTEGER, keys, args));
        if (r == null || r < 0 || r > objects.size()) {
            throw new MetadataFailure("unexpected answer " + r + " to a batch publish", null);
        }
        return r == 0 ? Optional.empty() : Optional.of(objects.get((int) (r - 1)).key());
    }

    public Optional<StoredObject> object(String key) {
        Map<String, String> h = call("read object " + key, () -> redis.hgetall(objectKey(key)));
        return decode(key, h);
    }

    /**
     * The entries of {@code keys} and the segments epoch, read in one atomic step (one round trip):
     * every (re)registration of a segment descriptor bumps the epoch before its owner can allocate,
     * so an entry that points into a new incarnation of a segment always comes with an epoch at
     * least that new, and a reader that catches up to it sees every replica's current owner.
     *
     * @return per key in order, its entry (empty where there is none), each with the same epoch
     */
    public List<Entry> objectsWithEpoch(List<String> keys) {
        // A page of keys per script, so that no read holds Redis for long however many small
        // objects a batch has (each page's entries carry the epoch read with them).
        List<Entry> out = new ArrayList<>(keys.size());
        for (int from = 0; from < keys.size(); from += PAGE) {
            out.addAll(pageWithEpoch(keys.subList(from, Math.min(keys.size(), from + PAGE))));
        }
        return out;
    }

    private List<Entry> pageWithEpoch(List<String> keys) {
        String[] redisKeys = new String[keys.size() + 1];
        for (int i = 0; i < keys.size(); i++) {
            redisKeys[i] = objectKey(keys.get(i));
        }
        redisKeys[keys.size()] = epochKey();
        List<Object> read =
                call(
                        keys.size() == 1
                                ? "read object " + keys.get(0)
                                : "read " + keys.size() + " objects",
                        () -> redis.eval(READ_OBJECTS, ScriptOutputType.MULTI, redisKeys));
        long epoch = read == null || read.isEmpty() ? 0 : Long.parseLong(read.get(0).toString());
        List<Entry> out = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            List<?> flat =
                    read == null || read.size() <= i + 1 ? List.of() : (List<?>) read.get(i + 1);
            Map<String, String> h = new java.util.HashMap<>();
            for (int f = 0; f + 1 < flat.size(); f += 2) {
                h.put(String.valueOf(flat.get(f)), String.valueOf(flat.get(f + 1)));
            }
            out.add(new Entry(decode(keys.get(i), h), epoch));
        }
        return out;
    }

    /** The segments epoch: how many segment descriptors were ever (re)registered. */
    public long segmentsEpoch() {
        String v = call("read the segments epoch", () -> redis.get(epochKey()));
        return v == null ? 0 : Long.parseLong(v);
    }

    /** An object's entry (empty if none) and the segments epoch read with it. */
    public record Entry(Optional<StoredObject> object, long segmentsEpoch) {}

    private String epochKey() {
        return prefix + "segments-epoch";
    }

    /**
     * The replicas field of each key's entry, pipelined a page at a time (one round trip per
     * thousand keys, so a Kimi-K2 generation's 70,000 objects take tens of round trips).
     *
     * @return per key in order, its entry, or null where there is none
     */
    public List<StoredObject> objects(List<String> keys) {
        RedisAsyncCommands<String, String> async = connection.async();
        List<StoredObject> out = new ArrayList<>(keys.size());
        for (int from = 0; from < keys.size(); from += PAGE) {
            List<String> page = keys.subList(from, Math.min(keys.size(), from + PAGE));
            List<RedisFuture<Map<String, String>>> futures = new ArrayList<>(page.size());
            for (String key : page) {
                futures.add(async.hgetall(objectKey(key)));
            }
            if (!LettuceFutures.awaitAll(
                    WAIT.toMillis(), TimeUnit.MILLISECONDS, futures.toArray(RedisFuture[]::new))) {
                throw new MetadataFailure(
                        "reading " + page.size() + " object entries took over " + WAIT, null);
            }
            for (int i = 0; i < page.size(); i++) {
                Map<String, String> h;
                try {
                    h = futures.get(i).get();
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new MetadataFailure("read object " + page.get(i), e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new MetadataFailure("interrupted reading object entries", e);
                }
                out.add(decode(page.get(i), h).orElse(null));
            }
        }
        return out;
    }

    public boolean objectExists(String key) {
        Long n = call("check object " + key, () -> redis.exists(objectKey(key)));
        return n != null && n > 0;
    }

    /** Atomically removes an object entry and returns what it was. */
    public Optional<StoredObject> takeObject(String key) {
        List<Object> flat =
                call(
                        "remove " + key,
                        () -> redis.eval(TAKE, ScriptOutputType.MULTI, objectKey(key)));
        if (flat == null || flat.isEmpty()) {
            return Optional.empty();
        }
        Map<String, String> h = new java.util.HashMap<>();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            h.put(String.valueOf(flat.get(i)), String.valueOf(flat.get(i + 1)));
        }
        return decode(key, h);
    }

    private Optional<StoredObject> decode(String key, Map<String, String> h) {
        if (h == null || h.isEmpty()) {
            return Optional.empty();
        }
        try {
            List<StoredObject.Replica> replicas = new ArrayList<>();
            for (String r : h.get("replicas").split(";")) {
                int at = r.lastIndexOf('@');
                replicas.add(
                        new StoredObject.Replica(
                                r.substring(0, at), Long.parseLong(r.substring(at + 1))));
            }
            return Optional.of(
                    new StoredObject(
                            key,
                            Long.parseLong(h.get("size")),
                            "1".equals(h.get("pin")),
                            List.copyOf(replicas)));
        } catch (RuntimeException e) {
            throw new MetadataFailure("unreadable directory entry of " + key, e);
        }
    }

    private static String encode(List<StoredObject.Replica> replicas) {
        StringBuilder sb = new StringBuilder();
        for (StoredObject.Replica r : replicas) {
            if (sb.length() > 0) {
                sb.append(';');
            }
            sb.append(r.segment()).append('@').append(r.offset());
        }
        return sb.toString();
    }

    private String segmentKey(String name) {
        return prefix + "seg:" + name;
    }

    private String objectKey(String key) {
        return prefix + "obj:" + key;
    }

    private static <T> T call(String what, Supplier<T> body) {
        try {
            return body.get();
        } catch (RedisException e) {
            throw new MetadataFailure(what + " failed in Redis", e);
        }
    }

    @Override
    public void close() {
        try {
            connection.close();
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }
}
