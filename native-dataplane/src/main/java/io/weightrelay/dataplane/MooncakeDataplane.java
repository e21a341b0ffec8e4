package io.weightrelay.dataplane;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.dataplane.MooncakeAgent.Mapped;
import io.weightrelay.dataplane.internal.HostIdentity;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import org.bytedeco.javacpp.Pointer;

/**
 * The data plane on the real Mooncake Store and Transfer Engine, driven through one {@link
 * MooncakeAgent} per data plane (docs/dataplane.md, "The Mooncake engine").
 *
 * <p>What maps to what: store capacity is the agent's own mounted segment ({@link
 * MooncakeConfig#segmentSize()}), so {@link #createSegment} is refused; a {@linkplain
 * #createReceiveSegment receive segment} is a shared-memory file this JVM and the agent both map,
 * registered with Mooncake's store client (the source of puts, the destination of reads) and its
 * Transfer Engine (the target of peers' one-sided writes), and published in Redis under {@code
 * <prefix>mc:seg:<name>} with the agent's Transfer Engine segment ({@code host:port}) and the
 * file's address in the agent, which is how peers address it by name. {@link #registerBuffer} is
 * refused: a direct buffer of this JVM cannot be mapped by the agent process. Thread safe.
 */
final class MooncakeDataplane implements Dataplane, LocalMemoryOwner {
    private static final System.Logger LOG = System.getLogger(MooncakeDataplane.class.getName());
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]+");

    /** One receive segment: the Java mapping, the agent's, and its published directory entry. */
    record Local(Segment segment, Mapped mapped, MappedByteBuffer mapping) {
        /**
         * Identity: a record's own equality would compare the mapping's bytes ({@link
         * java.nio.ByteBuffer#hashCode} sums every remaining byte), a full pass over the segment
         * every time a read groups its ranges by destination.
         */
        @Override
        public boolean equals(Object other) {
            return this == other;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }

        /**
         * The CRC32C of {@code length} bytes at {@code offset} of the segment as they are now, read
         * through this JVM's mapping (the file the agent maps too, so what Mooncake moved).
         */
        int crc32c(long offset, long length) {
            CRC32C crc = new CRC32C();
            crc.update(mapping.slice(Math.toIntExact(offset), Math.toIntExact(length)));
            return (int) crc.getValue();
        }
    }

    private final DataplaneConfig config;
    private final MooncakeAgent agent;
    private final RedisClient redisClient;
    private final StatefulRedisConnection<String, String> redis;
    private final String instance;
    private final MooncakeOwnerLock ownerLock;
    private final String shmIdentity;
    private final Map<String, Local> segments = new ConcurrentHashMap<>();

    /** Names this data plane published for memory of other processes' Transfer Engines. */
    private final Map<String, ForeignSegment> foreign = new ConcurrentHashMap<>();

    private final MooncakeTransferEngine engine;
    private final MooncakeStoreClient store;
    private final MooncakeCounters counters = new MooncakeCounters();
    private volatile boolean closed;

    private MooncakeDataplane(
            DataplaneConfig config,
            MooncakeAgent agent,
            RedisClient redisClient,
            StatefulRedisConnection<String, String> redis,
            String instance,
            MooncakeOwnerLock ownerLock,
            String shmIdentity) {
        this.config = config;
        this.agent = agent;
        this.instance = instance;
        this.ownerLock = ownerLock;
        this.shmIdentity = shmIdentity;
        this.redisClient = redisClient;
        this.redis = redis;
        this.engine = new MooncakeTransferEngine(this);
        this.store = new MooncakeStoreClient(this);
    }

    static MooncakeDataplane open(DataplaneConfig config) {
        MooncakeConfig mc = config.mooncake();
        String id = UUID.randomUUID().toString().substring(0, 8);
        Path socket = mc.workDir().toAbsolutePath().resolve(id + ".sock");
        if (socket.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 107) {
            throw new IllegalArgumentException(
                    "the agent's unix socket "
                            + socket
                            + " is longer than the 107 bytes a socket path may have: choose a"
                            + " shorter MooncakeConfig.workDir");
        }
        try {
            Files.createDirectories(mc.workDir());
        } catch (IOException e) {
            throw new MooncakeAgentException(
                    DataplaneError.IO,
                    "MooncakeSetupError",
                    "cannot create the agent's work directory " + mc.workDir() + ": " + e);
        }
        String shmIdentity = HostIdentity.derive(config.shmDir());
        MooncakeOwnerLock.reclaimOrphans(config.shmDir());
        String instance = UUID.randomUUID().toString();
        MooncakeOwnerLock ownerLock = MooncakeOwnerLock.acquire(config.shmDir(), instance);
        RedisURI uri = RedisURI.create(config.redisUri());
        uri.setTimeout(config.connectTimeout().plus(config.ioTimeout()));
        RedisClient client = RedisClient.create(uri);
        StatefulRedisConnection<String, String> connection;
        try {
            connection = client.connect();
        } catch (RuntimeException e) {
            client.shutdown(0, 2, TimeUnit.SECONDS);
            ownerLock.close();
            throw new MetadataException(
                    "cannot connect to Redis at " + RedisUris.mask(config.redisUri()), e);
        }
        try {
            MooncakeAgent agent =
                    MooncakeAgent.start(
                            new MooncakeAgent.Options(
                                    mc.python(),
                                    mc.pythonPath(),
                                    mc.prefix(),
                                    socket,
                                    mc.master(),
                                    mc.hostname(),
                                    mc.segmentSize(),
                                    mc.protocol(),
                                    mc.metadata(),
                                    mc.workDir().resolve(config.nodeLabel() + "-" + id + ".log"),
                                    mc.startTimeout(),
                                    mc.commandTimeout()));
            return new MooncakeDataplane(
                    config, agent, client, connection, instance, ownerLock, shmIdentity);
        } catch (RuntimeException e) {
            connection.close();
            client.shutdown(0, 2, TimeUnit.SECONDS);
            ownerLock.close();
            throw e;
        }
    }

    MooncakeAgent agent() {
        return agent;
    }

    RedisCommands<String, String> redis() {
        return redis.sync();
    }

    String directoryKey(String segment) {
        return config.keyPrefix() + "mc:seg:" + segment;
    }

    /**
     * The name of the agent's own store segment in Mooncake: what {@link
     * ReplicateConfig#preferredSegments()} names to place a replica there ("" for a reading
     * client).
     */
    String storeSegment() {
        return agent.ready().storeSegment();
    }

    /** The receive segment {@code local} names, when it is one of this data plane's. */
    Local local(LocalMemory memory) {
        if (memory instanceof Segment s && s.ownedBy(engine)) {
            Local l = segments.get(s.name());
            if (l != null && l.segment() == s && !s.isClosed()) {
                return l;
            }
        }
        throw new UnregisteredBufferException(memory.describe());
    }

    @Override
    public DataplaneConfig config() {
        return config;
    }

    @Override
    public String nodeLabel() {
        return config.nodeLabel();
    }

    @Override
    public String hostId() {
        return config.hostId() != null ? config.hostId() : config.mooncake().hostname();
    }

    /** The port of the agent's Transfer Engine (its rpc port, what peers' writes connect to). */
    @Override
    public int tcpPort() {
        String segment = agent.ready().engineSegment();
        return Integer.parseInt(segment.substring(segment.lastIndexOf(':') + 1));
    }

    @Override
    public TransferEngine engine() {
        return engine;
    }

    @Override
    public StoreClient store() {
        return store;
    }

    /**
     * The bytes this data plane asked Mooncake to move and Mooncake reported moved, local or tcp by
     * where the bytes were ({@link MooncakeCounters}); {@code tcpServed*} are always 0.
     */
    @Override
    public Counters counters() {
        return counters.snapshot();
    }

    /** The endpoint the master reports for replicas in the agent's mounted segment. */
    @Override
    public Optional<String> storeEndpoint() {
        String own = agent.ready().storeEndpoint();
        return own.isEmpty() ? Optional.empty() : Optional.of(own);
    }

    /**
     * Pings the agent, starting it again if it died (a death the ping itself meets is followed by a
     * second ping, which starts the successor), and answers each death of an agent that mounted
     * store capacity since the last call ({@link MooncakeAgent#takeDeaths}).
     */
    @Override
    public List<String> storeCapacityLost() {
        checkOpen();
        try {
            agent.ping();
        } catch (MooncakeAgentGoneException e) {
            LOG.log(System.Logger.Level.WARNING, e.getMessage());
            agent.ping();
        }
        List<String> deaths = agent.takeDeaths();
        return config.mooncake().segmentSize() == 0
                ? List.of()
                : deaths.stream()
                        .map(
                                d ->
                                        d
                                                + ": the "
                                                + config.mooncake().segmentSize()
                                                + "-byte Mooncake segment it mounted, and every"
                                                + " object in it, went with it")
                        .toList();
    }

    MooncakeCounters byteCounters() {
        return counters;
    }

    /**
     * Whether the segment whose directory entry is {@code entry} is on this data plane's node: the
     * same node label and the same shared memory, the built-in engine's test for its local
     * transport. Bytes moved to or from such a segment stay on the node (Mooncake carries them over
     * its loopback), so they count as local, as they would on the built-in engine.
     */
    boolean sameNode(Map<String, String> entry) {
        return config.nodeLabel().equals(entry.get("node")) && shmIdentity.equals(entry.get("shm"));
    }

    /**
     * Whether every one of {@code endpoints} (replicas' transport endpoints, as {@link
     * MooncakeAgent#replicas} names them) is this data plane's own mounted segment.
     */
    boolean allOwn(List<String> endpoints) {
        String own = agent.ready().storeEndpoint();
        return !endpoints.isEmpty() && !own.isEmpty() && endpoints.stream().allMatch(own::equals);
    }

    /** Refused: Mooncake's store capacity is the agent's mounted segment, not a segment file. */
    @Override
    public Segment createSegment(String name, long size) {
        throw new MooncakeUnsupportedException(
                "Dataplane.createSegment",
                "store capacity is the "
                        + config.mooncake().segmentSize()
                        + " bytes the Mooncake agent mounted at start (MooncakeConfig.segmentSize),"
                        + " named '"
                        + storeSegment()
                        + "' in Mooncake; use createReceiveSegment for memory of this process");
    }

    /**
     * Refused: Mooncake's registered memory has no incarnation of ours, so a transfer addressed to
     * the earlier registration could not be told apart. The caller makes the segment anew.
     */
    @Override
    public void renewReceiveSegment(Segment segment) {
        throw new MooncakeUnsupportedException(
                "Dataplane.renewReceiveSegment",
                "memory registered with Mooncake carries no incarnation to renew; create the"
                        + " receive segment again");
    }

    @Override
    public synchronized Segment createReceiveSegment(String name, long size) {
        claimName(name, size);
        String key = directoryKey(name);
        Path path =
                config.shmDir()
                        .resolve(
                                MooncakeOwnerLock.segmentFileName(
                                        instance,
                                        config.keyPrefix().replace(':', '_') + "-" + name));
        MappedByteBuffer mapping = null;
        try {
            Files.deleteIfExists(path);
            try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
                f.setLength(size);
                mapping = f.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, size);
            }
            Mapped mapped = agent.map(path, size);
            long address = new Pointer(mapping).address();
            Segment segment =
                    new Segment(this, name, size, address, path, SegmentKind.RECEIVE, List.of());
            segments.put(name, new Local(segment, mapped, mapping));
            publish(name);
            return segment;
        } catch (IOException | RuntimeException e) {
            segments.remove(name);
            redis().del(key);
            try {
                Files.deleteIfExists(path);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            if (e instanceof RuntimeException r) {
                throw r;
            }
            throw new DataplaneException(
                    DataplaneError.IO, "cannot create segment '" + name + "': " + e, e);
        }
    }

    /**
     * Checks a new segment's name and size and makes its directory entry this data plane's (an
     * entry holding only {@code instance} until it is published): refused while another live engine
     * holds the name.
     */
    private void claimName(String name, long size) {
        checkOpen();
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    "segment name '" + name + "' must hold only letters, digits, '.', '_', '-'");
        }
        if (size <= 0) {
            throw new IllegalArgumentException("segment size must be > 0: " + size);
        }
        if (segments.containsKey(name) || foreign.containsKey(name)) {
            throw new DataplaneException(
                    DataplaneError.EXISTS, "segment '" + name + "' exists in this data plane");
        }
        String key = directoryKey(name);
        if (!redis().hsetnx(key, "instance", instance) && !takeOverFromTheDead(name)) {
            throw new DataplaneException(
                    DataplaneError.EXISTS,
                    "segment '"
                            + name
                            + "' is published by another Mooncake engine ("
                            + redis().hget(key, "endpoint")
                            + ")");
        }
    }

    /**
     * Publishes {@code name} as the worker's memory {@code buffer}: the directory entry names the
     * worker's Transfer Engine and the buffer's address there instead of this agent's, so every
     * engine's writes to the name ({@link MooncakeTransferEngine}) go straight to the worker; its
     * {@code notify_endpoint} and {@code notify_address} (this agent's Transfer Engine, the
     * read-back segment's address in it) are where a write with notify sends the notify instead,
     * since the worker's engine counts none. The entry is this data plane's like a receive
     * segment's ({@code instance}, {@code shm}): a successor of this process takes it over once
     * this process is gone.
     */
    @Override
    public synchronized ForeignSegment attachForeignSegment(
            String name, long size, ForeignBuffer buffer) {
        claimName(name, size);
        Segment readBack;
        try {
            readBack = createReceiveSegment(name + ".readback", size);
        } catch (RuntimeException e) {
            redis().del(directoryKey(name));
            throw e;
        }
        ForeignSegment attached =
                new ForeignSegment(name, size, buffer, readBack, () -> detachForeignSegment(name));
        foreign.put(name, attached);
        try {
            publishForeign(attached);
        } catch (RuntimeException e) {
            foreign.remove(name);
            redis().del(directoryKey(name));
            readBack.close();
            throw e;
        }
        LOG.log(
                System.Logger.Level.INFO,
                "segment '"
                        + name
                        + "' published as "
                        + size
                        + " bytes at 0x"
                        + Long.toHexString(buffer.address())
                        + " of the Transfer Engine "
                        + buffer.engineSegment());
        return attached;
    }

    private void publishForeign(ForeignSegment f) {
        redis().hset(directoryKey(f.name()), foreignEntry(f));
    }

    private Map<String, String> foreignEntry(ForeignSegment f) {
        return Map.of(
                "instance", instance,
                "endpoint", f.buffer().engineSegment(),
                "address", Long.toString(f.buffer().address()),
                "size", Long.toString(f.size()),
                "node", config.nodeLabel(),
                "shm", shmIdentity,
                "notify_endpoint", agent.ready().engineSegment(),
                "notify_address",
                        Long.toString(agent.address(segments.get(f.readBack().name()).mapped())));
    }

    private synchronized void detachForeignSegment(String name) {
        if (foreign.remove(name) != null) {
            String key = directoryKey(name);
            if (instance.equals(redis().hget(key, "instance"))) {
                redis().del(key);
            }
        }
    }

    /**
     * Makes {@code name}'s directory entry this data plane's when the engine that published it is
     * provably gone: it published from this host's shm directory (the same {@code shm} identity),
     * and its owner lock is free or removed ({@link MooncakeOwnerLock}): its JVM ended, and its
     * agent with it. Its leftover segment files are removed on the way. Anything else stays
     * refused: an owner on another host (or one whose entry predates the lock) may live, and a live
     * owner keeps its name. The entry changes hands only if it still names the dead owner, so two
     * successors racing for the name cannot both win.
     */
    private boolean takeOverFromTheDead(String name) {
        String key = directoryKey(name);
        Map<String, String> entry = redis().hgetall(key);
        String previous = entry.get("instance");
        if (previous == null
                || !shmIdentity.equals(entry.get("shm"))
                || !MooncakeOwnerLock.isGone(config.shmDir(), previous)) {
            return false;
        }
        Long won =
                redis().eval(
                                "if redis.call('hget', KEYS[1], 'instance') == ARGV[1] then"
                                        + " redis.call('del', KEYS[1])"
                                        + " redis.call('hset', KEYS[1], 'instance', ARGV[2])"
                                        + " return 1 end return 0",
                                ScriptOutputType.INTEGER,
                                new String[] {key},
                                previous,
                                instance);
        if (won != null && won == 1) {
            LOG.log(
                    System.Logger.Level.INFO,
                    "took segment '"
                            + name
                            + "' over from the Mooncake engine at "
                            + entry.get("endpoint")
                            + " (node "
                            + entry.get("node")
                            + "): its process is gone");
            return true;
        }
        return false;
    }

    private void publish(String name) {
        Local l = segments.get(name);
        redis().hset(
                        directoryKey(name),
                        Map.of(
                                "instance", instance,
                                "endpoint", agent.ready().engineSegment(),
                                "address", Long.toString(agent.address(l.mapped())),
                                "size", Long.toString(l.segment().size()),
                                "node", config.nodeLabel(),
                                "shm", shmIdentity));
    }

    /**
     * Publishes again the entries of this data plane's receive segments that are gone from Redis,
     * and those whose agent address changed (a restarted agent maps the files anew).
     */
    @Override
    public synchronized List<String> reannounceSegments() {
        List<String> published = new ArrayList<>();
        for (Map.Entry<String, Local> e : segments.entrySet()) {
            Map<String, String> entry = redis().hgetall(directoryKey(e.getKey()));
            boolean current =
                    instance.equals(entry.get("instance"))
                            && agent.ready().engineSegment().equals(entry.get("endpoint"))
                            && Long.toString(agent.address(e.getValue().mapped()))
                                    .equals(entry.get("address"));
            if (entry.isEmpty() || (instance.equals(entry.get("instance")) && !current)) {
                publish(e.getKey());
                published.add(e.getKey());
            }
        }
        for (ForeignSegment f : foreign.values()) {
            Map<String, String> entry = redis().hgetall(directoryKey(f.name()));
            if (entry.isEmpty()
                    || (instance.equals(entry.get("instance")) && !entry.equals(foreignEntry(f)))) {
                publishForeign(f);
                published.add(f.name());
            }
        }
        return published;
    }

    @Override
    public Optional<Segment> segment(String name) {
        Local l = segments.get(name);
        return l == null ? Optional.empty() : Optional.of(l.segment());
    }

    /** Refused: the agent (another process) cannot map a direct buffer of this JVM. */
    @Override
    public RegisteredBuffer registerBuffer(ByteBuffer direct) {
        throw new MooncakeUnsupportedException(
                "Dataplane.registerBuffer",
                "the Mooncake agent is another process and cannot map a direct buffer of this JVM;"
                        + " use createReceiveSegment (shared memory both map)");
    }

    @Override
    public long freeBytes(String segment) {
        return 0; // receive segments only: never store capacity
    }

    @Override
    public synchronized void destroySegment(Segment segment) {
        Local l = segments.remove(segment.name());
        if (l == null) {
            return;
        }
        String key = directoryKey(segment.name());
        if (instance.equals(redis().hget(key, "instance"))) {
            redis().del(key);
        }
        try {
            agent.unmap(l.mapped());
        } catch (DataplaneException e) {
            LOG.log(System.Logger.Level.WARNING, "unmapping " + segment + ": " + e.getMessage());
        }
        try {
            Files.deleteIfExists(segment.shmPath());
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "removing " + segment.shmPath() + ": " + e);
        }
    }

    @Override
    public void unregisterBuffer(RegisteredBuffer buffer) {
        throw new IllegalStateException("the Mooncake engine registers no buffers");
    }

    private void checkOpen() {
        if (closed) {
            throw new DataplaneClosedException("Mooncake data plane of " + config.nodeLabel());
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            for (ForeignSegment f : List.copyOf(foreign.values())) {
                f.close();
            }
            for (Local l : List.copyOf(segments.values())) {
                l.segment().close();
            }
        } finally {
            try {
                agent.close();
            } finally {
                try {
                    redis.close();
                    redisClient.shutdown(0, 2, TimeUnit.SECONDS);
                } finally {
                    ownerLock.close();
                }
            }
        }
    }
}
