package io.weightrelay.control.store;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.dataplane.ObjectNotFoundException;
import io.weightrelay.dataplane.StoreClient;
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
 * native library is unavailable; failures surface as 503 {@code store-unavailable}.
 */
@Component
class DataplaneObjectStore implements ObjectStore, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(DataplaneObjectStore.class);

    private final StoreProperties properties;
    private Dataplane dataplane;

    DataplaneObjectStore(StoreProperties properties) {
        this.properties = properties;
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
                    Map<String, List<String>> out = new LinkedHashMap<>();
                    for (String key : keys) {
                        try {
                            List<String> segments = new ArrayList<>();
                            for (ObjectLocation l : store.locations(key)) {
                                segments.add(l.segment());
                            }
                            out.put(key, segments);
                        } catch (ObjectNotFoundException ex) {
                            // absent objects are left out
                        }
                    }
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
                dataplane =
                        Dataplane.open(
                                DataplaneConfig.builder(properties.nodeLabel())
                                        .redisUri(properties.redisUri())
                                        .keyPrefix(properties.keyPrefix())
                                        .tcpBindHost(properties.bindHost())
                                        .ioTimeout(properties.ioTimeout())
                                        .build());
                log.info(
                        "object store: data plane opened at {} with prefix {}",
                        properties.redisUri(),
                        properties.keyPrefix());
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
