package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import io.weightrelay.dataplane.internal.Metadata;
import io.weightrelay.dataplane.internal.SegmentDescriptor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;

/** The built-in engine's {@link TransferEngine} (its contract is there). */
final class BuiltinTransferEngine implements TransferEngine {
    private static final int MAX_NAME = 4096;
    private static final System.Logger LOG =
            System.getLogger(TransferEngine.class.getName()); // the name log configurations use

    private final EngineHandle handle;
    private final Metadata metadata;
    private final String nodeLabel;
    private final String hostId;
    private final Predicate<String> ownSegment;
    private final Path shmDir;
    private final Function<String, String> shmFileName;
    private final Map<String, Resolved> segments = new ConcurrentHashMap<>();
    private final Object epochLock = new Object();
    private volatile long seenEpoch = -1;
    private volatile long mappedEpoch = -1;

    private record Resolved(long id, SegmentDescriptor descriptor) {}

    BuiltinTransferEngine(
            EngineHandle handle,
            Metadata metadata,
            String nodeLabel,
            String hostId,
            Predicate<String> ownSegment,
            Path shmDir,
            Function<String, String> shmFileName) {
        this.handle = handle;
        this.metadata = metadata;
        this.nodeLabel = nodeLabel;
        this.hostId = hostId;
        this.ownSegment = ownSegment;
        this.shmDir = shmDir;
        this.shmFileName = shmFileName;
    }

    /** Whether this process's data plane created the segment (only it allocates there). */
    boolean owns(String segment) {
        return ownSegment.test(segment);
    }

    @Override
    public String nodeLabel() {
        return nodeLabel;
    }

    @Override
    public TransferBatch submit(List<TransferRequest> requests) {
        return submit(requests, null, false);
    }

    @Override
    public TransferBatch submitChecksummed(List<TransferRequest> requests) {
        return submit(requests, null, true);
    }

    @Override
    public TransferBatch submitWithNotify(List<TransferRequest> requests, String notifyName) {
        checkName(notifyName, "notify name");
        return submit(requests, notifyName, false);
    }

    @Override
    public TransferBatch submitChecksummedWithNotify(
            List<TransferRequest> requests, String notifyName) {
        checkName(notifyName, "notify name");
        return submit(requests, notifyName, true);
    }

    @Override
    public void transfer(List<TransferRequest> requests, Duration timeout) {
        try (TransferBatch batch = submit(requests)) {
            batch.awaitSuccess(timeout);
        }
    }

    @Override
    public long registerNotify(String name) {
        checkName(name, "notify name");
        handle.call((e, st) -> DpNative.dp_notify_register(e, name, st)).check(name);
        return notifyCount(name);
    }

    @Override
    public void unregisterNotify(String name) {
        checkName(name, "notify name");
        NativeStatus status = handle.call((e, st) -> DpNative.dp_notify_unregister(e, name, st));
        if (!status.is(DataplaneError.NOT_FOUND)) {
            status.check(name);
        }
    }

    @Override
    public long notifyCount(String name) {
        checkName(name, "notify name");
        long[] value = new long[1];
        NativeStatus status = handle.call((e, st) -> DpNative.dp_notify_get(e, name, value, st));
        if (status.is(DataplaneError.NOT_FOUND)) {
            throw notRegistered(name);
        }
        status.check(name);
        return value[0];
    }

    private static DataplaneException notRegistered(String name) {
        return new DataplaneException(
                DataplaneError.NOT_FOUND,
                "notify counter '" + name + "' is not registered (registerNotify first)");
    }

    @Override
    public long awaitNotify(String name, long atLeast, Duration timeout) {
        checkName(name, "notify name");
        long[] value = new long[1];
        NativeStatus status =
                handle.call(
                        (e, st) ->
                                DpNative.dp_notify_wait(
                                        e, name, atLeast, timeout.toMillis(), value, st));
        if (status.is(DataplaneError.TIMEOUT)) {
            throw new NotifyTimeoutException(name, atLeast, value[0]);
        }
        if (status.is(DataplaneError.NOT_FOUND)) {
            throw notRegistered(name);
        }
        status.check("notify '" + name + "'");
        return value[0];
    }

    /** The descriptor of a registered segment, if any (from the metadata store). */
    Optional<SegmentDescriptor> describe(String segment) {
        return Optional.ofNullable(resolve(segment)).map(Resolved::descriptor);
    }

    private TransferBatch submit(
            List<TransferRequest> requests, String notifyName, boolean checksummed) {
        handle.checkOpen();
        int n = requests.size();
        int[] ops = new int[n];
        long[] addrs = new long[n];
        long[] ids = new long[n];
        long[] offsets = new long[n];
        long[] lengths = new long[n];
        long[] sizes = new long[n];
        for (int i = 0; i < n; i++) {
            TransferRequest r = requests.get(i);
            Resolved seg = resolve(r.segment());
            ops[i] = r.op() == TransferRequest.Op.READ ? 0 : 1;
            ids[i] = seg == null ? -1 : seg.id();
            sizes[i] = seg == null ? 0 : seg.descriptor().size();
            offsets[i] = r.segmentOffset();
            lengths[i] = r.length();
            addrs[i] = localAddress(r.local(), r.localOffset(), r.length());
        }
        DpNative.dp_batch out = new DpNative.dp_batch();
        NativeStatus status =
                handle.call(
                        (e, st) ->
                                DpNative.dp_batch_submit_flags(
                                        e,
                                        n,
                                        ops,
                                        addrs,
                                        ids,
                                        offsets,
                                        lengths,
                                        notifyName,
                                        checksummed ? DpNative.DP_BATCH_CRC32C : 0,
                                        out,
                                        st));
        status.check("transfer batch");
        return new BuiltinTransferBatch(
                this, List.copyOf(requests), sizes, notifyName, checksummed, out);
    }

    /**
     * The native address of local memory at offset. An offset outside the memory yields an address
     * the engine rejects (never registered), so the task fails with OUT_OF_BOUNDS or
     * UNREGISTERED_BUFFER instead of touching foreign memory.
     */
    static long localAddress(LocalMemory memory, long offset, long length) {
        long base =
                memory instanceof Segment s ? s.address() : ((RegisteredBuffer) memory).address();
        if (offset < 0 || length < 0 || offset > memory.size() - length) {
            return 0;
        }
        return base + offset;
    }

    long segmentId(String segment) {
        Resolved r = resolve(segment);
        if (r == null) {
            throw Errors.found(DataplaneError.UNKNOWN_SEGMENT, segment);
        }
        return r.id();
    }

    long alloc(String segment, long length) {
        return alloc(segment, length, false);
    }

    /** Allocates in {@code segment}: at the end of its highest hole that fits when {@code high}. */
    long alloc(String segment, long length, boolean high) {
        long[] offset = new long[1];
        long id = segmentId(segment);
        NativeStatus status =
                handle.call(
                        (e, st) ->
                                high
                                        ? DpNative.dp_segment_alloc_high(e, id, length, offset, st)
                                        : DpNative.dp_segment_alloc(e, id, length, offset, st));
        if (status.failed()) {
            onTaskFailure(segment, status.error());
        }
        status.check(segment);
        return offset[0];
    }

    NativeStatus free(String segment, long offset) {
        Resolved r = resolve(segment);
        if (r == null) {
            return new NativeStatus(
                    DataplaneError.UNKNOWN_SEGMENT.code(),
                    "freeing offset " + offset + " of segment '" + segment + "': no descriptor");
        }
        NativeStatus status =
                handle.call((e, st) -> DpNative.dp_segment_free(e, r.id(), offset, st));
        if (status.failed()) {
            onTaskFailure(segment, status.error());
        }
        return status;
    }

    /**
     * Splits the allocation at {@code block} of an own segment into pieces keyed by {@code
     * starts[i]} and frees the rest of it (see {@code dp_segment_carve}).
     */
    void carve(String segment, long block, long[] starts, long[] lengths) {
        long id = segmentId(segment);
        NativeStatus status =
                handle.call(
                        (e, st) ->
                                DpNative.dp_segment_carve(
                                        e, id, block, starts.length, starts, lengths, st));
        if (status.is(DataplaneError.INVALID_ARGUMENT)) {
            throw new IllegalArgumentException(
                    "cannot carve block "
                            + block
                            + " of segment '"
                            + segment
                            + "': pieces must be sorted, disjoint, non-empty and inside it, and"
                            + " the segment must be this process's own");
        }
        status.check(segment + " block " + block);
    }

    /** Forgets a cached segment whose owner is gone, so the next use reads Redis again. */
    void onTaskFailure(String segment, DataplaneError error) {
        if (error == DataplaneError.PEER_GONE
                || error == DataplaneError.UNKNOWN_SEGMENT
                || error == DataplaneError.STALE_SEGMENT) {
            Resolved r = segments.get(segment);
            if (r != null) {
                drop(segment, r);
            }
        }
    }

    /**
     * Forgets {@code r}, the cached resolution of {@code segment}, here and in the native engine,
     * unless another thread already replaced it; returns whether it was still cached.
     */
    private boolean drop(String segment, Resolved r) {
        if (!segments.remove(segment, r)) {
            return false;
        }
        handle.call((e, st) -> DpNative.dp_segment_close(e, r.id(), st));
        return true;
    }

    void forget(String segment) {
        segments.remove(segment);
    }

    @Override
    public void probe(String segment) {
        checkName(segment, "segment");
        Resolved r = resolve(segment);
        if (r == null) {
            throw Errors.found(DataplaneError.UNKNOWN_SEGMENT, segment);
        }
        NativeStatus status = handle.call((e, st) -> DpNative.dp_segment_probe(e, r.id(), st));
        // A file its owner removed, or a segment it renewed since: the descriptor is read again.
        if ((status.is(DataplaneError.UNKNOWN_SEGMENT) || status.is(DataplaneError.STALE_SEGMENT))
                && drop(segment, r)) {
            Resolved again = resolve(segment);
            if (again == null) {
                throw Errors.found(DataplaneError.UNKNOWN_SEGMENT, segment);
            }
            status = handle.call((e, st) -> DpNative.dp_segment_probe(e, again.id(), st));
        }
        status.check(segment);
    }

    @Override
    public int revalidate() {
        int forgotten = 0;
        List<Map.Entry<String, Resolved>> cached = new ArrayList<>(segments.entrySet());
        List<Optional<SegmentDescriptor>> current =
                BuiltinDataplane.metadata(
                        () -> metadata.segments(cached.stream().map(Map.Entry::getKey).toList()));
        for (int i = 0; i < cached.size(); i++) {
            Map.Entry<String, Resolved> e = cached.get(i);
            Optional<SegmentDescriptor> now = current.get(i);
            boolean stale =
                    now.isEmpty()
                            || !now.get().equals(e.getValue().descriptor())
                            || fileRemoved(e.getValue());
            if (stale && drop(e.getKey(), e.getValue())) {
                forgotten++;
            }
        }
        return forgotten;
    }

    /**
     * Whether {@code r} is a mapping of this node's file that its owner has since removed, or whose
     * segment it renewed (another incarnation).
     */
    private boolean fileRemoved(Resolved r) {
        SegmentDescriptor d = r.descriptor();
        if (!nodeLabel.equals(d.nodeLabel()) || !hostId.equals(d.hostId()) || owns(d.name())) {
            return false; // another node's (reached over tcp) or this engine's own
        }
        NativeStatus status = handle.call((x, st) -> DpNative.dp_segment_probe(x, r.id(), st));
        return status.is(DataplaneError.UNKNOWN_SEGMENT) || status.is(DataplaneError.STALE_SEGMENT);
    }

    /**
     * Revalidates the cache once per move of the segments epoch (read atomically with an object's
     * entry): an entry pointing into a re-created segment is then never read through the old
     * incarnation's mapping or endpoint.
     */
    void catchUp(long segmentsEpoch) {
        if (segmentsEpoch == seenEpoch) {
            return;
        }
        synchronized (epochLock) {
            if (segmentsEpoch != seenEpoch) {
                revalidate();
                seenEpoch = segmentsEpoch;
            }
        }
    }

    private Resolved resolve(String segment) {
        Resolved cached = segments.get(segment);
        if (cached != null) {
            return cached;
        }
        Optional<SegmentDescriptor> d = BuiltinDataplane.metadata(() -> metadata.segment(segment));
        return d.isEmpty() ? null : open(d.get());
    }

    /**
     * Opens the segment {@code desc} describes (maps its file when it is on this node, else makes
     * its peer known) and caches it; null when it is on this node but its file is gone.
     */
    private Resolved open(SegmentDescriptor desc) {
        String segment = desc.name();
        if (!desc.current()) {
            throw new MetadataException(
                    "descriptor of segment '"
                            + segment
                            + "' was written by an older data plane (no host identity or"
                            + " incarnation): restart"
                            + " its owner so it republishes the segment",
                    null);
        }
        checkDescriptor(desc);
        long[] id = new long[1];
        NativeStatus status =
                handle.call(
                        (e, st) ->
                                DpNative.dp_segment_open(
                                        e,
                                        desc.name(),
                                        desc.nodeLabel(),
                                        desc.hostId(),
                                        desc.host(),
                                        desc.port(),
                                        desc.shmPath(),
                                        desc.size(),
                                        desc.incarnation(),
                                        id,
                                        st));
        if (status.is(DataplaneError.UNKNOWN_SEGMENT)) {
            return null; // same node, but its file is gone: the owner died or closed it
        }
        if (status.is(DataplaneError.FOREIGN_HOST)) {
            throw new ForeignHostException(
                    segment,
                    "segment '"
                            + segment
                            + "' belongs to node label '"
                            + desc.nodeLabel()
                            + "' on host '"
                            + desc.hostId()
                            + "', but this engine has the same label on host '"
                            + hostId
                            + "': two hosts are configured with one node label; give each host"
                            + " its own DataplaneConfig.nodeLabel");
        }
        status.check(segment);
        Resolved r = new Resolved(id[0], desc);
        // Resolved by two threads at once, both get the same id: the native engine keeps one
        // segment per name and descriptor.
        segments.put(segment, r);
        return r;
    }

    @Override
    public int mapNodeSegments() {
        checkOpen();
        long epoch = BuiltinDataplane.metadata(metadata::segmentsEpoch);
        if (epoch == mappedEpoch) {
            return 0;
        }
        List<String> names = BuiltinDataplane.metadata(metadata::segmentNames);
        List<Optional<SegmentDescriptor>> descriptors =
                BuiltinDataplane.metadata(() -> metadata.segments(names));
        int mapped = 0;
        for (Optional<SegmentDescriptor> d : descriptors) {
            if (d.isEmpty() || !d.get().current()) {
                continue;
            }
            SegmentDescriptor desc = d.get();
            if (!nodeLabel.equals(desc.nodeLabel())
                    || !hostId.equals(desc.hostId())
                    || owns(desc.name())
                    || segments.containsKey(desc.name())) {
                continue;
            }
            try {
                if (open(desc) != null) {
                    mapped++;
                }
            } catch (DataplaneException e) {
                LOG.log(
                        System.Logger.Level.DEBUG,
                        "segment '" + desc.name() + "' of this node not mapped ahead: " + e);
            }
        }
        mappedEpoch = epoch;
        return mapped;
    }

    /**
     * Refuses a descriptor whose shared-memory path is not the segment's own file: its file name
     * must be the one this data plane derives from the segment's name (every descriptor), and a
     * descriptor this engine would map (its node label and host) must name a regular file directly
     * inside this engine's shm directory, by a normalized absolute path (no {@code ..}) with no
     * symbolic link on the way. Nothing is mapped or connected before this passes.
     */
    void checkDescriptor(SegmentDescriptor desc) {
        String segment = desc.name();
        String raw = desc.shmPath();
        String expected = shmFileName.apply(segment);
        if (raw == null || raw.isEmpty()) {
            throw refuse(desc, "names no shared-memory file");
        }
        Path path;
        try {
            path = Path.of(raw);
        } catch (InvalidPathException e) {
            throw refuse(desc, "is not a valid path");
        }
        if (path.getFileName() == null || !path.getFileName().toString().equals(expected)) {
            throw refuse(desc, "does not name the segment's own file '" + expected + "'");
        }
        boolean mappedHere = nodeLabel.equals(desc.nodeLabel()) && hostId.equals(desc.hostId());
        if (!mappedHere) {
            return; // read over tcp from its owner; the path is never opened here
        }
        if (!path.isAbsolute() || !path.normalize().equals(path) || raw.contains("..")) {
            throw refuse(desc, "is not a normalized absolute path (no '..', no '.')");
        }
        Path dir;
        Path parent;
        try {
            dir = shmDir.toRealPath();
            parent = path.getParent() == null ? null : path.getParent().toRealPath();
        } catch (IOException e) {
            throw refuse(desc, "is not inside an existing directory: " + e.getMessage());
        }
        if (parent == null || !parent.equals(dir)) {
            throw refuse(desc, "is outside this engine's shm directory " + shmDir);
        }
        if (Files.isSymbolicLink(path)) {
            throw refuse(desc, "is a symbolic link");
        }
        if (Files.exists(path, LinkOption.NOFOLLOW_LINKS)
                && !Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS)) {
            throw refuse(desc, "is not a regular file");
        }
    }

    private static InvalidDescriptorException refuse(SegmentDescriptor desc, String why) {
        String message =
                "refused the descriptor of segment '"
                        + desc.name()
                        + "' (node label '"
                        + desc.nodeLabel()
                        + "', host '"
                        + desc.hostId()
                        + "') read from the metadata store: its shared-memory path '"
                        + desc.shmPath()
                        + "' "
                        + why
                        + "; nothing was mapped";
        LOG.log(System.Logger.Level.WARNING, message);
        return new InvalidDescriptorException(desc.name(), desc.shmPath(), message);
    }

    void checkOpen() {
        handle.checkOpen();
    }

    static void checkName(String name, String what) {
        if (name == null || name.isEmpty() || name.length() > MAX_NAME) {
            throw new IllegalArgumentException(what + " must have 1.." + MAX_NAME + " chars");
        }
    }
}
