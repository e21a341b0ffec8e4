package io.weightrelay.control.store;

import static io.weightrelay.service.test.StartRefusal.assertRefusesToStart;

import io.weightrelay.control.ControlApiApplication;
import io.weightrelay.service.dataplane.DataplaneSettingsException;
import org.junit.jupiter.api.Test;

/**
 * control-api's store client is configured like every engine: a start with settings that cannot
 * work fails at once (the data plane itself opens only on first use), naming the property.
 */
class AdvertisedAddressRefusalTest {

    @Test
    void aWildcardAdvertiseHostIsRefused() {
        assertRefusesToStart(
                ControlApiApplication.class,
                DataplaneSettingsException.class,
                "relay.dataplane.advertise-host=0.0.0.0 is a wildcard",
                "--relay.dataplane.bind-host=0.0.0.0",
                "--relay.dataplane.advertise-host=0.0.0.0",
                "--relay.generations.scheduled-gc=false");
    }

    @Test
    void aLoopbackEngineIsRefusedWhenRedisIsOnAnotherHost() {
        assertRefusesToStart(
                ControlApiApplication.class,
                DataplaneSettingsException.class,
                "the store's Redis (relay.dataplane.redis-uri) is on redis",
                "--spring.data.redis.host=redis",
                "--relay.dataplane.secret=control-refusal-secret-0123456",
                "--relay.generations.scheduled-gc=false");
    }
}
