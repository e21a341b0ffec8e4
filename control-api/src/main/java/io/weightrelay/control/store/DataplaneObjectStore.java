package io.weightrelay.control.store;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
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
 * plane only to remove objects (which frees their space in the owners' segments) and to read the
 * object directory.
 */
@Component
class DataplaneObjectStore implements ObjectStore, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(DataplaneObjectStore.class);

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
