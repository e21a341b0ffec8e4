package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import io.weightrelay.dataplane.internal.HostIdentity;
import io.weightrelay.dataplane.internal.Metadata;
import io.weightrelay.dataplane.internal.SegmentDescriptor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/** The built-in engine's {@link Dataplane} (its contract is there). */
final class BuiltinDataplane implements Dataplane, LocalMemoryOwner {
    private static final System.Logger LOG =
            System.getLogger(Dataplane.class.getName()); // the name log configurations use
    private static final Pattern SEGMENT_NAME = Pattern.compile("[A-Za-z0-9._-]{1,200}");

    /** How the name of every segment file begins ({@link #shmFileName}). */
    private static final String SHM_FILE_PREFIX = "wr-";

    /** How the name of a segment file's sidecar ends: its ownership lock (dp.h). */
    private static final String OWNER_FILE_SUFFIX = ".owner";

    private final DataplaneConfig config;
    private final EngineHandle handle;
    private final Metadata metadata;
    private final BuiltinTransferEngine engine;
    private final BuiltinStoreClient store;
    private final Map<String, Segment> segments = new ConcurrentHashMap<>();

    /** The descriptor published for each live segment, to publish again when Redis lost it. */
    private final Map<String, SegmentDescriptor> descriptors = new ConcurrentHashMap<>();

    private final Map<Long, RegisteredBuffer> buffers = new ConcurrentHashMap<>();
    private final int tcpPort;
    private final String hostId;
    private final String engineId = UUID.randomUUID().toString();

    private BuiltinDataplane(
            DataplaneConfig config, EngineHandle handle, Metadata metadata, String hostId) {
        this.config = config;
        this.handle = handle;
        this.metadata = metadata;
        this.hostId = hostId;
        this.engine =
                new BuiltinTransferEngine(
                        handle,
                        metadata,
                        config.nodeLabel(),
                        hostId,
                        segments::containsKey,
                        config.shmDir(),
                        name -> shmFileName(config.keyPrefix(), name));
        this.store = new BuiltinStoreClient(engine, metadata, config.remover(), config.storer());
        this.tcpPort = handle.tcpPort();
    }

    /**
     * Starts the engine (its tcp server listens on {@code tcpBindHost:tcpPort}) and connects to the
     * metadata store.
     */
    static BuiltinDataplane open(DataplaneConfig config) {
        reclaimOrphanedSegmentFiles(config.shmDir());
        String hostId =
                config.hostId() != null ? config.hostId() : HostIdentity.derive(config.shmDir());
        EngineHandle handle = EngineHandle.create(config, hostId);
        try {
            Metadata metadata =
                    metadata(
                            () ->
                                    Metadata.connect(
                                            config.redisUri(),
                                            config.keyPrefix(),
                                            // a short peer timeout must not make Redis flaky
                                            max(config.ioTimeout(), config.connectTimeout()),
                                            config.redisCaCertificate()));
            return new BuiltinDataplane(config, handle, metadata, hostId);
        } catch (RuntimeException e) {
            handle.close();
            throw e;
        }
    }

    /** See {@link Dataplane#reclaimOrphanedSegmentFiles}. */
    static List<ReclaimedSegmentFile> reclaimOrphanedSegmentFiles(Path shmDir) {
        DpNative.load();
        List<Path> candidates;
        try (var files = Files.list(shmDir)) {
            candidates =
                    files.map(f -> f.getFileName().toString())
                            .filter(
                                    n ->
                                            n.startsWith(SHM_FILE_PREFIX)
                                                    && n.endsWith(OWNER_FILE_SUFFIX))
                            .map(
                                    n ->
                                            shmDir.resolve(
                                                    n.substring(
                                                            0,
                                                            n.length()
                                                                    - OWNER_FILE_SUFFIX.length())))
                            .toList();
        } catch (IOException | UncheckedIOException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "cannot list " + shmDir + " for orphaned segment files: " + e);
            return List.of();
        }
        List<ReclaimedSegmentFile> reclaimed = new ArrayList<>();
        for (Path file : candidates) {
            long[] bytes = new long[1];
            NativeStatus status =
                    NativeStatus.of(
                            st ->
                                    DpNative.dp_shm_reclaim(
                                            shmDir.toString(),
                                            file.getFileName().toString(),
                                            bytes,
                                            st));
            if (!status.failed()) {
                reclaimed.add(new ReclaimedSegmentFile(file, bytes[0]));
                LOG.log(
                        System.Logger.Level.INFO,
                        "reclaimed segment file "
                                + file
                                + " ("
                                + bytes[0]
                                + " bytes): its owner process is gone");
            } else if (!status.is(DataplaneError.EXISTS) && !status.is(DataplaneError.NOT_FOUND)) {
                LOG.log(System.Logger.Level.WARNING, status.message());
            }
        }
        return List.copyOf(reclaimed);
    }

    private static java.time.Duration max(java.time.Duration a, java.time.Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
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
        return hostId;
    }

    @Override
    public int tcpPort() {
        return tcpPort;
    }

    @Override
    public TransferEngine engine() {
        return engine;
    }

    @Override
    public StoreClient store() {
        return store;
    }

    @Override
    public Counters counters() {
        handle.checkOpen();
        return handle.counters();
    }

    @Override
    public Segment createSegment(String name, long size) {
        return create(name, size, SegmentKind.STORE);
    }

    /** Refused: the built-in engine writes only into segments of engines of its own kind. */
    @Override
    public ForeignSegment attachForeignSegment(String name, long size, ForeignBuffer buffer) {
        throw new ForeignSegmentUnsupportedException(name, buffer);
    }

    @Override
    public Segment createReceiveSegment(String name, long size) {
        return create(name, size, SegmentKind.RECEIVE);
    }

    private Segment create(String name, long size, SegmentKind kind) {
        handle.checkOpen();
        if (!SEGMENT_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("bad segment name '" + name + "'");
        }
        if (size <= 0) {
            throw new IllegalArgumentException("segment size must be > 0: " + size);
        }
        refuseIfOwnedByALiveEngine(name);
        List<String> purged = List.of();
        if (kind == SegmentKind.STORE) {
            // The file will be new: directory entries left pointing into this name (a crashed or
            // closed owner's objects) are stale. Purge them before the new file exists, so no
            // reader finds them in its bytes; their generations are unreadable from now on.
            purged = List.copyOf(metadata(() -> metadata.purgeObjectsIn(name)));
        }
        Path path = config.shmDir().resolve(shmFileName(name));
        long[] base = new long[1];
        // The name is ours now (free, or its owner is gone): a file left behind is unlinked and
        // made anew, never reused or truncated under peers that may still map it.
        int flags =
                (kind == SegmentKind.STORE
                                ? DpNative.DP_SEGMENT_STORE
                                : DpNative.DP_SEGMENT_RECEIVE)
                        | DpNative.DP_SEGMENT_REPLACE;
        NativeStatus status =
                handle.call(
                        (e, st) ->
                                DpNative.dp_segment_create(
                                        e, name, path.toString(), size, flags, base, st));
        if (status.is(DataplaneError.SEGMENT_FULL)) {
            throw new SegmentFullException(
                    "no room in " + config.shmDir() + " for segment '" + name + "'");
        }
        if (status.is(DataplaneError.EXISTS)) {
            throw new DataplaneException(
                    DataplaneError.EXISTS, "segment '" + name + "' already exists in this engine");
        }
        status.check(name);
        long[] incarnation = new long[1];
        handle.call((e, st) -> DpNative.dp_segment_incarnation(e, name, incarnation, st))
                .check(name);
        Segment segment = new Segment(this, name, size, base[0], path, kind, purged);
        segments.put(name, segment);
        SegmentDescriptor descriptor =
                new SegmentDescriptor(
                        name,
                        config.nodeLabel(),
                        hostId,
                        config.advertiseHost(),
                        tcpPort,
                        size,
                        path.toString(),
                        kind == SegmentKind.STORE,
                        engineId,
                        incarnation[0]);
        try {
            metadata(
                    () -> {
                        metadata.putSegment(descriptor);
                        return null;
                    });
            descriptors.put(name, descriptor);
        } catch (RuntimeException e) {
            segment.close();
            throw e;
        }
        engine.forget(name);
        return segment;
    }

    @Override
    public void renewReceiveSegment(Segment segment) {
        handle.checkOpen();
        String name = segment.name();
        // under the lock destroySegment takes: a segment closed meanwhile is never renewed
        synchronized (descriptors) {
            SegmentDescriptor before = descriptors.get(name);
            if (segment.kind() != SegmentKind.RECEIVE
                    || segments.get(name) != segment
                    || before == null) {
                throw new DataplaneException(
                        DataplaneError.INVALID_ARGUMENT,
                        "segment '" + name + "' is not a live receive segment of this data plane");
            }
            long[] incarnation = new long[1];
            handle.call((e, st) -> DpNative.dp_segment_renew(e, name, incarnation, st)).check(name);
            SegmentDescriptor renewed =
                    new SegmentDescriptor(
                            before.name(),
                            before.nodeLabel(),
                            before.hostId(),
                            before.host(),
                            before.port(),
                            before.size(),
                            before.shmPath(),
                            before.store(),
                            before.engineId(),
                            incarnation[0]);
            // Kept first: should Redis refuse, reannounceSegments publishes the new descriptor,
            // never the earlier one (which the segment refuses by now).
            descriptors.put(name, renewed);
            metadata(
                    () -> {
                        metadata.putSegment(renewed);
                        return null;
                    });
        }
        engine.forget(name);
    }

    @Override
    public List<String> reannounceSegments() {
        handle.checkOpen();
        List<String> again = new ArrayList<>();
        for (Map.Entry<String, SegmentDescriptor> e : descriptors.entrySet()) {
            String name = e.getKey();
            // under the lock destroySegment takes: a segment closed meanwhile is never announced
            synchronized (descriptors) {
                if (!segments.containsKey(name)) {
                    continue;
                }
                if (metadata(() -> metadata.segment(name)).isEmpty()) {
                    metadata(
                            () -> {
                                metadata.putSegment(e.getValue());
                                return null;
                            });
                    again.add(name);
                }
            }
        }
        return again;
    }

    @Override
    public Optional<Segment> segment(String name) {
        return Optional.ofNullable(segments.get(name));
    }

    @Override
    public RegisteredBuffer registerBuffer(ByteBuffer direct) {
        handle.checkOpen();
        if (!direct.isDirect() || direct.capacity() == 0) {
            throw new IllegalArgumentException("need a non-empty direct ByteBuffer");
        }
        long address = DpNative.addressOf(direct);
        handle.call((e, st) -> DpNative.dp_memory_register(e, address, direct.capacity(), st))
                .check("buffer 0x" + Long.toHexString(address));
        RegisteredBuffer buffer = new RegisteredBuffer(this, direct, address);
        buffers.put(address, buffer);
        return buffer;
    }

    /**
     * A name already published by another engine that still answers on its endpoint belongs to it;
     * a descriptor whose owner is gone (crashed, killed) is taken over, file included. The probe
     * only proves death where it can reach the owner: an owner on another host that advertised a
     * loopback address cannot be probed from here, so its name is never taken over.
     */
    private void refuseIfOwnedByALiveEngine(String name) {
        Optional<SegmentDescriptor> existing = metadata(() -> metadata.segment(name));
        if (existing.isEmpty()) {
            return;
        }
        SegmentDescriptor d = existing.get();
        if (engineId.equals(d.engineId())) {
            return;
        }
        boolean otherHost = d.hostId() != null && !d.hostId().equals(hostId);
        if (otherHost && isLoopback(d.host())) {
            throw new DataplaneException(
                    DataplaneError.EXISTS,
                    "segment '"
                            + name
                            + "' is owned by an engine on host '"
                            + d.hostId()
                            + "' that advertises the loopback address "
                            + d.host()
                            + ": this host cannot tell whether it is alive, so it keeps the name"
                            + " (give that engine a reachable advertiseHost, or remove its"
                            + " descriptor)");
        }
        boolean sameEndpoint =
                !otherHost && d.port() == tcpPort && d.host().equals(config.advertiseHost());
        if (!sameEndpoint && answers(d.host(), d.port())) {
            throw new DataplaneException(
                    DataplaneError.EXISTS,
                    "segment '"
                            + name
                            + "' is owned by the live engine at "
                            + d.host()
                            + ":"
                            + d.port()
                            + (otherHost ? " on host '" + d.hostId() + "'" : ""));
        }
    }

    private static boolean isLoopback(String host) {
        String h = host.trim().toLowerCase(java.util.Locale.ROOT);
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        if (h.equals("localhost") || h.endsWith(".localhost")) {
            return true;
        }
        if (!h.matches("[0-9.]+") && !h.contains(":")) {
            return false; // a name: resolving it here says nothing about the owner's host
        }
        try {
            java.net.InetAddress a = java.net.InetAddress.getByName(h); // a literal: no lookup
            return a.isLoopbackAddress() || a.isAnyLocalAddress();
        } catch (java.net.UnknownHostException e) {
            return false;
        }
    }

    private boolean answers(String host, int port) {
        long timeout = Math.max(100, Math.min(2000, config.connectTimeout().toMillis()));
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), (int) timeout);
            return true;
        } catch (IOException | IllegalArgumentException e) {
            return false;
        }
    }

    EngineHandle handle() {
        return handle;
    }

    @Override
    public long freeBytes(String segment) {
        return handle.freeBytes(segment);
    }

    @Override
    public void destroySegment(Segment segment) {
        try {
            synchronized (descriptors) {
                segments.remove(segment.name(), segment);
                descriptors.remove(segment.name());
                metadata(
                        () -> {
                            metadata.removeSegment(segment.name());
                            return null;
                        });
            }
        } finally {
            engine.forget(segment.name());
            handle.call((e, st) -> DpNative.dp_segment_destroy(e, segment.name(), 1, st));
        }
    }

    @Override
    public void unregisterBuffer(RegisteredBuffer buffer) {
        buffers.remove(buffer.address(), buffer);
        handle.call((e, st) -> DpNative.dp_memory_unregister(e, buffer.address(), st));
    }

    private String shmFileName(String name) {
        return shmFileName(config.keyPrefix(), name);
    }

    /** See {@link Dataplane#shmFileName}. */
    static String shmFileName(String prefix, String name) {
        return SHM_FILE_PREFIX + prefix.replaceAll("[^A-Za-z0-9._-]", "_") + name;
    }

    /** Runs a metadata call, turning Redis failures into {@link MetadataException}. */
    static <T> T metadata(Supplier<T> body) {
        try {
            return body.get();
        } catch (Metadata.MetadataFailure e) {
            throw new MetadataException(e.getMessage(), e.getCause());
        }
    }

    @Override
    public void close() {
        if (handle.isClosed()) {
            return;
        }
        List<RuntimeException> failures = new ArrayList<>();
        for (Segment s : List.copyOf(segments.values())) {
            try {
                s.close();
            } catch (RuntimeException e) {
                failures.add(e);
            }
        }
        for (RegisteredBuffer b : List.copyOf(buffers.values())) {
            b.close();
        }
        handle.close();
        try {
            metadata.close();
        } catch (RuntimeException e) {
            failures.add(e);
        }
        if (!failures.isEmpty()) {
            DataplaneException e =
                    new DataplaneException(DataplaneError.IO, "dataplane closed with failures");
            failures.forEach(e::addSuppressed);
            throw e;
        }
    }
}
