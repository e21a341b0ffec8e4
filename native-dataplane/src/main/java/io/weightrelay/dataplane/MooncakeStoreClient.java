package io.weightrelay.dataplane;

import io.weightrelay.dataplane.MooncakeAgent.Read;
import io.weightrelay.dataplane.MooncakeAgent.Span;
import io.weightrelay.dataplane.MooncakeDataplane.Local;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.atomic.LongAdder;

/**
 * The store client of a {@link MooncakeDataplane}: Mooncake Store's own directory and allocator (in
 * its master), reached through the agent. Differences from the built-in store, each documented at
 * its method: the directory is Mooncake's, not Redis; replicas are named by their owner's transport
 * endpoint; objects land in the agents' mounted segments, preferably the one {@link
 * ReplicateConfig#preferredSegments()} names first (Mooncake store segment names, {@code
 * MooncakeDataplane#storeSegment}); sources and destinations are receive segments of this data
 * plane. Thread safe (the agent serializes commands).
 */
final class MooncakeStoreClient implements StoreClient {
    /** Mooncake's {@code OBJECT_NOT_FOUND}. */
    static final int OBJECT_NOT_FOUND = -704;

    /** Mooncake's {@code OBJECT_ALREADY_EXISTS}. */
    static final int OBJECT_ALREADY_EXISTS = -705;

    private final MooncakeDataplane dp;
    private final LongAdder leaseRetries = new LongAdder();

    MooncakeStoreClient(MooncakeDataplane dp) {
        this.dp = dp;
    }

    private record MooncakeLocated(MooncakeStoreClient owner, String key, List<String> segments)
            implements Located {}

    /** Mooncake's {@code OBJECT_HAS_LEASE}: a read's lease on the object has not ended. */
    static final int OBJECT_HAS_LEASE = -706;

    /** Mooncake's {@code LEASE_EXPIRED}: a range landed after the read's lease had run out. */
    static final int LEASE_EXPIRED = -707;

    private static final System.Logger LOG =
            System.getLogger(Dataplane.class.getName()); // the name log configurations use

    private static final Map<Integer, String> CODE_NAMES =
            Map.of(
                    OBJECT_NOT_FOUND, "OBJECT_NOT_FOUND",
                    OBJECT_ALREADY_EXISTS, "OBJECT_ALREADY_EXISTS",
                    OBJECT_HAS_LEASE, "OBJECT_HAS_LEASE",
                    LEASE_EXPIRED, "LEASE_EXPIRED");

    private static MooncakeOperationException failed(String op, int code, String key) {
        String name = CODE_NAMES.getOrDefault(code, "code " + code);
        return new MooncakeOperationException(
                op,
                code,
                name,
                key,
                "Mooncake " + op + " of '" + key + "' failed with " + code + " (" + name + ")");
    }

    /**
     * {@code batch_remove} without force, tried again every 50 ms for the keys whose objects a read
     * still leases, until {@link MooncakeConfig#leaseWait()} passed: per key, the last code.
     */
    private List<Integer> removeWaitingOutLeases(List<String> keys) {
        long deadline = System.nanoTime() + dp.config().mooncake().leaseWait().toNanos();
        Integer[] codes = dp.agent().remove(keys, false).toArray(Integer[]::new);
        while (true) {
            List<Integer> leased = new ArrayList<>();
            for (int i = 0; i < codes.length; i++) {
                if (codes[i] == OBJECT_HAS_LEASE) {
                    leased.add(i);
                }
            }
            if (leased.isEmpty() || System.nanoTime() > deadline) {
                return List.of(codes);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return List.of(codes);
            }
            List<Integer> again = dp.agent().remove(leased.stream().map(keys::get).toList(), false);
            for (int j = 0; j < leased.size(); j++) {
                codes[leased.get(j)] = again.get(j);
            }
        }
    }

    /**
     * {@code batch_put_from} of one object. Mooncake answers 0 to a put of a key it already holds,
     * so the key is checked first: two puts of one key racing may both return.
     *
     * @throws ObjectExistsException if Mooncake holds an object under {@code key}
     * @throws UnregisteredBufferException unless {@code source} is a receive segment of this data
     *     plane
     */
    @Override
    public void putFrom(
            String key, LocalMemory source, long sourceOffset, long size, ReplicateConfig config) {
        Local local = dp.local(source);
        if (sourceOffset < 0 || size <= 0 || sourceOffset > source.size() - size) {
            throw new OutOfBoundsException(source.describe(), sourceOffset, size, source.size());
        }
        if (exists(key)) {
            throw new ObjectExistsException(key, "Mooncake holds an object under '" + key + "'");
        }
        String preferred =
                config.preferredSegments().isEmpty() ? null : config.preferredSegments().get(0);
        int code =
                dp.agent()
                        .put(
                                local.mapped(),
                                List.of(key),
                                List.of(sourceOffset),
                                List.of(size),
                                preferred,
                                config.replicaNum(),
                                config.hardPin())
                        .get(0);
        if (code == OBJECT_ALREADY_EXISTS) {
            throw new ObjectExistsException(key, "Mooncake holds an object under '" + key + "'");
        }
        if (code != 0) {
            throw failed("put", code, key);
        }
        dp.byteCounters().written(dp.allOwn(dp.agent().replicas(List.of(key)).get(0)), size);
    }

    @Override
    public long reserve(Segment own, long size) {
        throw inPlace("StoreClient.reserve");
    }

    @Override
    public long reserve(Segment own, long size, End end) {
        throw inPlace("StoreClient.reserve");
    }

    @Override
    public void releaseReservation(Segment own, long block) {
        throw inPlace("StoreClient.releaseReservation");
    }

    @Override
    public void publishInPlace(
            Segment own, long block, List<InPlaceObject> objects, boolean hardPin) {
        throw inPlace("StoreClient.publishInPlace");
    }

    private static MooncakeUnsupportedException inPlace(String method) {
        return new MooncakeUnsupportedException(
                method,
                "Mooncake allocates only in the segments its agents mount and a put always copies"
                        + " into them: there is no in-place publish; use putFrom");
    }

    /**
     * {@code get_into_ranges}, after one {@code batch_get_replica_desc} (as {@link #locate}) that
     * tells a missing object and which counter the bytes go to: per range, its bytes or a negative
     * code. Ranges are checked against their destination here ({@link
     * DataplaneError#OUT_OF_BOUNDS}, {@link DataplaneError#UNREGISTERED_BUFFER} for memory that is
     * not a receive segment of this data plane); an empty range reads 0 bytes; ranges whose read
     * lease ran out before they landed ({@code LEASE_EXPIRED}) are read once more with a fresh
     * lease; Mooncake's other codes are passed through (negative).
     *
     * @throws ObjectNotFoundException when Mooncake holds no object under {@code key}
     * @throws ReadLeaseExpiredException when a range's lease ran out in the retry too
     */
    @Override
    public long[] getIntoRanges(String key, List<ReadRange> ranges) {
        return getIntoRanges(locate(List.of(key)).get(0), ranges);
    }

    /**
     * Validates the ranges, reads the valid ones, and reads those whose lease ran out once more.
     *
     * <p>Mooncake's master leases an object to a reader for its {@code --default_kv_lease_ttl} each
     * time the reader queries it (the query {@code get_into_ranges} starts with, and the renewals
     * it sends at half the remaining lease while the bytes move); a non-forced remove or an
     * eviction leaves a leased object alone. A range that lands after the lease ran out (the
     * agent's waiting thread or the master starved for over half the TTL, say on a loaded machine)
     * is answered {@code LEASE_EXPIRED} instead of its byte count: its bytes may be another
     * object's that reused the space. Objects here are immutable (a key is one generation's), so
     * reading those ranges again is safe: the retry's query takes a fresh lease, and an object
     * removed meanwhile reads as missing. A second expiry fails the read ({@link
     * ReadLeaseExpiredException}).
     */
    private long[] read(MooncakeLocated object, List<ReadRange> ranges) {
        String key = object.key();
        long[] out = new long[ranges.size()];
        Local[] locals = new Local[ranges.size()];
        List<Integer> valid = new ArrayList<>();
        for (int i = 0; i < ranges.size(); i++) {
            ReadRange r = ranges.get(i);
            try {
                locals[i] = dp.local(r.destination());
            } catch (UnregisteredBufferException e) {
                out[i] = DataplaneError.UNREGISTERED_BUFFER.code();
                continue;
            }
            long room = r.destination().size();
            if (r.objectOffset() < 0
                    || r.length() < 0
                    || r.destinationOffset() < 0
                    || r.destinationOffset() > room - r.length()) {
                out[i] = DataplaneError.OUT_OF_BOUNDS.code();
            } else if (r.length() == 0) {
                out[i] = 0;
            } else {
                valid.add(i);
            }
        }
        transfer(key, ranges, locals, valid, out);
        List<Integer> expired = expired(out, valid);
        if (!expired.isEmpty()) {
            leaseRetries.increment();
            LOG.log(
                    System.Logger.Level.WARNING,
                    "Mooncake''s read lease on ''{0}'' ran out before {1} of its ranges landed"
                            + " (LEASE_EXPIRED): reading them again with a fresh lease",
                    key,
                    expired.size());
            transfer(key, ranges, locals, expired, out);
        }
        boolean notFound = false;
        long moved = 0;
        for (int i : valid) {
            notFound |= out[i] == OBJECT_NOT_FOUND;
            moved += Math.max(0, out[i]);
        }
        dp.byteCounters().read(dp.allOwn(object.segments()), moved);
        if (notFound) {
            throw new ObjectNotFoundException(key, "Mooncake holds no object under '" + key + "'");
        }
        List<Integer> still = expired(out, expired);
        if (!still.isEmpty()) {
            throw new ReadLeaseExpiredException(
                    key, still.stream().map(i -> ranges.get(i).objectOffset()).toList());
        }
        return out;
    }

    /** Of {@code indices}, those whose result is {@code LEASE_EXPIRED}. */
    private static List<Integer> expired(long[] out, List<Integer> indices) {
        return indices.stream().filter(i -> out[i] == LEASE_EXPIRED).toList();
    }

    /**
     * One agent {@code get_ranges} per destination memory ({@code locals}, as validation found it)
     * for the ranges {@code indices} names; each range's byte count or Mooncake's code goes to its
     * place in {@code out}.
     */
    private void transfer(
            String key, List<ReadRange> ranges, Local[] locals, List<Integer> indices, long[] out) {
        Map<Local, List<Integer>> byMemory = new LinkedHashMap<>();
        for (int i : indices) {
            byMemory.computeIfAbsent(locals[i], l -> new ArrayList<>()).add(i);
        }
        for (Map.Entry<Local, List<Integer>> e : byMemory.entrySet()) {
            List<Span> spans = new ArrayList<>();
            for (int i : e.getValue()) {
                ReadRange r = ranges.get(i);
                spans.add(new Span(r.destinationOffset(), r.objectOffset(), r.length()));
            }
            List<Long> got =
                    dp.agent()
                            .getIntoRanges(e.getKey().mapped(), List.of(new Read(key, spans)))
                            .get(0);
            for (int j = 0; j < got.size(); j++) {
                out[e.getValue().get(j)] = got.get(j);
            }
        }
    }

    /** How many reads found a range's lease run out and read again (since this client began). */
    long leaseRetries() {
        return leaseRetries.sum();
    }

    /** One {@code batch_get_replica_desc} for all keys; a missing key fails only its read. */
    @Override
    public List<Located> locate(List<String> keys) {
        if (keys.isEmpty()) {
            return List.of();
        }
        List<List<String>> replicas = dp.agent().replicas(keys);
        List<Located> out = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            out.add(new MooncakeLocated(this, keys.get(i), replicas.get(i)));
        }
        return out;
    }

    @Override
    public long[] getIntoRanges(Located object, List<ReadRange> ranges) {
        return read(found(object), ranges);
    }

    /** The object {@code object} names, when this store client located it and it was there. */
    private MooncakeLocated found(Located object) {
        if (!(object instanceof MooncakeLocated l) || l.owner() != this) {
            throw new IllegalArgumentException(
                    "object '" + object.key() + "' was located by another store client");
        }
        if (l.segments().isEmpty()) {
            throw new ObjectNotFoundException(
                    l.key(), "Mooncake held no object under '" + l.key() + "' when located");
        }
        return l;
    }

    /**
     * {@link #getIntoRanges(Located, List)}, then the CRC32C of every range read in full, summed in
     * this JVM over the destination's bytes as they landed (the shared-memory file the agent read
     * into): Mooncake takes no checksum while it moves bytes, so this is a second pass over them,
     * which {@link ChecksummedReads#checksumNanos()} times. The contract holds: each CRC is of the
     * bytes that landed.
     */
    @Override
    public ChecksummedReads getIntoRangesChecksummed(Located object, List<ReadRange> ranges) {
        long[] bytes = getIntoRanges(object, ranges);
        int[] crcs = new int[ranges.size()];
        long start = System.nanoTime();
        for (int i = 0; i < ranges.size(); i++) {
            ReadRange r = ranges.get(i);
            if (bytes[i] > 0 && bytes[i] == r.length()) {
                crcs[i] = dp.local(r.destination()).crc32c(r.destinationOffset(), r.length());
            }
        }
        return new ChecksummedReads(bytes, crcs, System.nanoTime() - start);
    }

    @Override
    public ChecksummedReads getIntoRangesChecksummed(String key, List<ReadRange> ranges) {
        return getIntoRangesChecksummed(locate(List.of(key)).get(0), ranges);
    }

    /**
     * {@code remove} without force: true when an object was removed, false when there was none. A
     * read leases the object for the master's {@code --default_kv_lease_ttl}; the remove waits it
     * out, at most {@link MooncakeConfig#leaseWait()} (a forced remove could pull the bytes from
     * under a reader).
     *
     * @throws MooncakeOperationException with code -706 ({@code OBJECT_HAS_LEASE}) when a read's
     *     lease still ran after {@code leaseWait} (the object stays), or any other code Mooncake
     *     answers
     */
    @Override
    public boolean remove(String key) {
        int code = removeWaitingOutLeases(List.of(key)).get(0);
        if (code == OBJECT_NOT_FOUND) {
            return false;
        }
        if (code != 0) {
            throw failed("remove", code, key);
        }
        return true;
    }

    /**
     * {@code batch_remove} without force, waiting out leases as {@link #remove} does; the first
     * failure is thrown after all were tried.
     */
    @Override
    public int removeAll(Collection<String> keys) {
        List<String> list = List.copyOf(keys);
        if (list.isEmpty()) {
            return 0;
        }
        List<Integer> codes = removeWaitingOutLeases(list);
        int removed = 0;
        MooncakeOperationException first = null;
        for (int i = 0; i < list.size(); i++) {
            int code = codes.get(i);
            if (code == 0) {
                removed++;
            } else if (code != OBJECT_NOT_FOUND && first == null) {
                first = failed("remove", code, list.get(i));
            }
        }
        if (first != null) {
            throw first;
        }
        return removed;
    }

    @Override
    public boolean exists(String key) {
        return dp.agent().exists(List.of(key)).get(0);
    }

    /**
     * Checks that each key has a memory replica in Mooncake now, in one round trip. Mooncake's
     * master drops the replicas of a client whose lease ended, so an object whose only owner died
     * reads as missing ({@link ObjectNotFoundException}) once the master noticed; {@link
     * PeerGoneException} is never thrown.
     *
     * @return the transport endpoints holding the objects, sorted
     */
    @Override
    public SortedSet<String> checkReadable(List<String> keys) {
        SortedSet<String> endpoints = new TreeSet<>();
        for (Located l : locate(keys)) {
            if (l.segments().isEmpty()) {
                throw new ObjectNotFoundException(
                        l.key(), "Mooncake holds no readable replica of '" + l.key() + "'");
            }
            endpoints.addAll(l.segments());
        }
        return endpoints;
    }

    @Override
    public List<ObjectLocation> locations(String key) {
        throw noLocations("StoreClient.locations");
    }

    @Override
    public Map<String, List<ObjectLocation>> locations(List<String> keys) {
        throw noLocations("StoreClient.locations");
    }

    /**
     * {@code get_size}.
     *
     * @throws ObjectNotFoundException when Mooncake holds no object under {@code key}
     */
    @Override
    public long size(String key) {
        long n = dp.agent().sizes(List.of(key)).get(0);
        if (n == OBJECT_NOT_FOUND) {
            throw new ObjectNotFoundException(key, "Mooncake holds no object under '" + key + "'");
        }
        if (n < 0) {
            throw failed("size", (int) n, key);
        }
        return n;
    }

    private static MooncakeUnsupportedException noLocations(String method) {
        return new MooncakeUnsupportedException(
                method,
                "the agent exposes only the transport endpoint of each replica (locate,"
                        + " checkReadable) and the object's size (size), not the replica's offset"
                        + " in Mooncake's segment");
    }
}
