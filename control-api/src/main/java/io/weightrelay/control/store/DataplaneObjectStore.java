package io.weightrelay.control.store;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.ObjectNotFoundException;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.problem.RelayException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
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
 * directory, and to read back the few objects whose readers' checksums dispute what was published.
 */
@Component
class DataplaneObjectStore implements ObjectStore, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(DataplaneObjectStore.class);

    /** The most bytes one read back of a disputed object holds in memory at a time. */
    static final int READ_BACK_CHUNK = 4 << 20;

    /** control-api's node label when {@code relay.dataplane.node-label} is empty. */
    static final String NODE_LABEL = "control-api";

    private final DataplaneSettings settings;
    private Dataplane dataplane;

    DataplaneObjectStore(DataplaneSettings settings) {
        this.settings = settings;
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

    @Override
    public Map<String, List<String>> locations(Collection<String> keys) {
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

    @Override
    public Optional<int[]> rangeChecksums(String key, List<Span> ranges) {
        long largest = 1;
        for (Span s : ranges) {
            largest = Math.max(largest, s.length());
        }
        int capacity = (int) Math.min(READ_BACK_CHUNK, largest);
        return withStore(
                store -> {
                    int[] out = new int[ranges.size()];
                    try (RegisteredBuffer buffer =
                            dataplane().registerBuffer(ByteBuffer.allocateDirect(capacity))) {
                        StoreClient.Located object = store.locate(List.of(key)).get(0);
                        for (int i = 0; i < out.length; i++) {
                            Span span = ranges.get(i);
                            int crc = 0;
                            for (long at = span.offset(); at < span.offset() + span.length(); ) {
                                long n = Math.min(capacity, span.offset() + span.length() - at);
                                StoreClient.ChecksummedReads read =
                                        store.getIntoRangesChecksummed(
                                                object, List.of(new ReadRange(at, n, buffer, 0)));
                                if (read.bytes()[0] != n) {
                                    throw StoreProblems.STORE_UNAVAILABLE.exception(
                                            "reading back ["
                                                    + at
                                                    + ", "
                                                    + (at + n)
                                                    + ") of "
                                                    + key
                                                    + " answered "
                                                    + read.bytes()[0]);
                                }
                                crc = Crc32c.combine(crc, read.crc32c()[0], n);
                                at += n;
                            }
                            out[i] = crc;
                        }
                    } catch (ObjectNotFoundException gone) {
                        return Optional.empty();
                    }
                    return Optional.of(out);
                });
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
