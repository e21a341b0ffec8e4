package io.weightrelay.control.store;

import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.LocalMemory;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.ObjectNotFoundException;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.problem.RelayException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.stereotype.Component;

/**
 * The production {@link ObjectStore}: the data plane's store client. The data plane is opened on
 * first use, so control-api starts (and serves everything else) while the store's Redis or the
 * native library is unavailable; failures surface as 503 {@code store-unavailable}. Its engine is
 * configured by {@code relay.dataplane.*} like every other (node label {@value #NODE_LABEL} unless
 * {@code relay.dataplane.node-label} says otherwise); control-api owns no segment, it opens a data
 * plane to remove objects (which frees their space in the owners' segments), to read the object
 * directory, to read back the few objects whose readers' checksums dispute what was published, and
 * to read the bytes a plan leaves unread of objects it reads only in part.
 */
@Component
class DataplaneObjectStore implements ObjectStore, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(DataplaneObjectStore.class);

    /** The most bytes one read back (of a disputed object, of unread bytes) holds at a time. */
    static final int READ_BACK_CHUNK = 4 << 20;

    /** control-api's node label when {@code relay.dataplane.node-label} is empty. */
    static final String NODE_LABEL = "control-api";

    private final DataplaneSettings settings;
    private final Registry registry;
    private Dataplane dataplane;

    DataplaneObjectStore(DataplaneSettings settings, Registry registry) {
        this.settings = settings;
        this.registry = registry;
    }

    @Override
    public long remove(Collection<String> keys) {
        return withStore(store -> (long) store.removeAll(keys));
    }

    @Override
    public Set<String> existing(Collection<String> keys) {
        return withStore(
                store -> {
                    Set<String> out = new LinkedHashSet<>();
                    for (String key : keys) {
                        if (store.exists(key)) {
                            out.add(key);
                        }
                    }
                    return out;
                });
    }

    /**
     * {@inheritDoc}
     *
     * <p>On Mooncake, which names a replica by the store endpoint of the agent holding it, never by
     * our segment name: one {@code locate} of all keys, each endpoint mapped to the live segment
     * owner that registered it ({@code storeEndpoint}). An endpoint no live owner registered maps
     * to no segment, so an object held only there is listed with none (a save refuses it as not
     * stored rather than call an unknown process; a restore puts it back).
     */
    @Override
    public Map<String, List<String>> locations(Collection<String> keys) {
        if (settings.engine() == DataplaneEngine.MOONCAKE) {
            return mooncakeLocations(keys);
        }
        return withStore(
                store -> {
                    // One pipelined directory read; absent objects are left out.
                    Map<String, List<String>> out = new LinkedHashMap<>();
                    store.locations(List.copyOf(keys))
                            .forEach(
                                    (key, where) -> {
                                        List<String> segments = new ArrayList<>(where.size());
                                        for (ObjectLocation l : where) {
                                            segments.add(l.segment());
                                        }
                                        out.put(key, segments);
                                    });
                    return out;
                });
    }

    private Map<String, List<String>> mooncakeLocations(Collection<String> keys) {
        Map<String, String> owners = new HashMap<>();
        for (SegmentOwner s : registry.liveSegments()) {
            if (s.getStoreEndpoint() != null) {
                owners.put(s.getStoreEndpoint(), s.getSegment());
            }
        }
        return withStore(
                store -> {
                    Map<String, List<String>> out = new LinkedHashMap<>();
                    for (StoreClient.Located l : store.locate(List.copyOf(keys))) {
                        if (l.segments().isEmpty()) {
                            continue;
                        }
                        out.put(
                                l.key(),
                                l.segments().stream()
                                        .map(owners::get)
                                        .filter(Objects::nonNull)
                                        .distinct()
                                        .toList());
                    }
                    return out;
                });
    }

    @Override
    public Optional<int[]> rangeChecksums(String key, List<Span> ranges) {
        long total = 1;
        for (Span s : ranges) {
            total += s.length();
        }
        int capacity = (int) Math.min(READ_BACK_CHUNK, total);
        return withStore(
                store -> {
                    int[] out = new int[ranges.size()];
                    try (ReadBack back = readBack(capacity)) {
                        LocalMemory buffer = back.memory();
                        StoreClient.Located object = store.locate(List.of(key)).get(0);
                        // Pieces of the ranges, packed side by side into the buffer: many small
                        // ranges (the holes a column split leaves in every row) take one request.
                        List<ReadRange> batch = new ArrayList<>();
                        List<Integer> owners = new ArrayList<>();
                        int used = 0;
                        for (int i = 0; i < out.length; i++) {
                            Span span = ranges.get(i);
                            for (long at = span.offset(); at < span.offset() + span.length(); ) {
                                if (used == capacity) {
                                    readPieces(store, object, key, batch, owners, out);
                                    used = 0;
                                }
                                long n =
                                        Math.min(
                                                capacity - used,
                                                span.offset() + span.length() - at);
                                batch.add(new ReadRange(at, n, buffer, used));
                                owners.add(i);
                                used += (int) n;
                                at += n;
                            }
                        }
                        readPieces(store, object, key, batch, owners, out);
                    } catch (ObjectNotFoundException gone) {
                        return Optional.empty();
                    }
                    return Optional.of(out);
                });
    }

    /**
     * Reads {@code batch} in one request and folds each piece's CRC32C into its range's ({@code
     * owners}, pieces in offset order per range); empties both lists.
     */
    private static void readPieces(
            StoreClient store,
            StoreClient.Located object,
            String key,
            List<ReadRange> batch,
            List<Integer> owners,
            int[] out) {
        if (batch.isEmpty()) {
            return;
        }
        StoreClient.ChecksummedReads read = store.getIntoRangesChecksummed(object, batch);
        for (int p = 0; p < batch.size(); p++) {
            ReadRange piece = batch.get(p);
            if (read.bytes()[p] != piece.length()) {
                throw StoreProblems.STORE_UNAVAILABLE.exception(
                        "reading back ["
                                + piece.objectOffset()
                                + ", "
                                + (piece.objectOffset() + piece.length())
                                + ") of "
                                + key
                                + " answered "
                                + read.bytes()[p]);
            }
            int range = owners.get(p);
            out[range] = Crc32c.combine(out[range], read.crc32c()[p], piece.length());
        }
        batch.clear();
        owners.clear();
    }

    /** Memory an object is read back into, released when closed. */
    private record ReadBack(LocalMemory memory) implements AutoCloseable {
        @Override
        public void close() {
            if (memory instanceof RegisteredBuffer b) {
                b.close();
            } else if (memory instanceof Segment s) {
                s.close();
            }
        }
    }

    /**
     * A direct buffer registered with the engine; on Mooncake, whose agent (another process) cannot
     * map a buffer of this JVM, a receive segment of control-api's own (shared memory both map).
     */
    private ReadBack readBack(int capacity) {
        if (settings.engine() == DataplaneEngine.MOONCAKE) {
            return new ReadBack(
                    dataplane()
                            .createReceiveSegment(
                                    "control-api-read-back-" + UUID.randomUUID(), capacity));
        }
        return new ReadBack(dataplane().registerBuffer(ByteBuffer.allocateDirect(capacity)));
    }

    private <T> T withStore(Function<StoreClient, T> call) {
        try {
            return call.apply(dataplane().store());
        } catch (RelayException ex) {
            throw ex;
        } catch (DataplaneException | IllegalStateException ex) {
            throw StoreProblems.STORE_UNAVAILABLE.exception(
                    "object store call failed: " + ex.getMessage(), ex);
        }
    }

    private synchronized Dataplane dataplane() {
        if (dataplane == null) {
            try {
                String node = settings.nodeLabel() != null ? settings.nodeLabel() : NODE_LABEL;
                dataplane = Dataplane.open(settings.removerConfig(node));
                log.info(
                        "object store: data plane opened at {} with prefix {}",
                        io.weightrelay.dataplane.RedisUris.mask(settings.properties().redisUri()),
                        settings.properties().keyPrefix());
            } catch (RuntimeException | LinkageError ex) {
                throw StoreProblems.STORE_UNAVAILABLE.exception(
                        "cannot open the data plane: " + ex.getMessage(), ex);
            }
        }
        return dataplane;
    }

    @Override
    public synchronized void destroy() {
        if (dataplane != null) {
            dataplane.close();
            dataplane = null;
        }
    }
}
