package io.weightrelay.publisher.segment;

import static io.weightrelay.service.test.StartRefusal.assertRefusesToStart;

import io.weightrelay.publisher.PublisherApplication;
import io.weightrelay.service.dataplane.DataplaneSettingsException;
import org.junit.jupiter.api.Test;

/**
 * The publisher refuses to start with an address other hosts cannot reach, and with a role its
 * engine cannot serve, naming the property, before it creates its segment.
 */
class AdvertisedAddressRefusalTest {

    private static final String SECRET = "--relay.dataplane.secret=publisher-refusal-secret-0123";

    @Test
    void aWildcardBindNeedsAnAdvertiseHost() {
        assertRefusesToStart(
                PublisherApplication.class,
                DataplaneSettingsException.class,
                "set relay.dataplane.advertise-host",
                "--relay.dataplane.bind-host=0.0.0.0",
                "--relay.segment.register=false");
    }

    @Test
    void aLoopbackAdminUrlIsRefusedWhilePeersAreOnOtherHosts() {
        assertRefusesToStart(
                PublisherApplication.class,
                DataplaneSettingsException.class,
                "relay.segment.admin-url=http://127.0.0.1:8081 is a loopback address",
                "--relay.dataplane.multi-host=true",
                "--relay.dataplane.advertise-host=198.18.0.5",
                SECRET,
                "--relay.segment.admin-url=http://127.0.0.1:8081",
                "--relay.segment.register=false");
    }

    @Test
    void aLoopbackEngineIsRefusedWhenTheStoreIsOnAnotherHost() {
        assertRefusesToStart(
                PublisherApplication.class,
                DataplaneSettingsException.class,
                "relay.dataplane.bind-host=127.0.0.1 is a loopback address",
                "--relay.dataplane.redis-uri=redis://redis:6379",
                SECRET,
                "--relay.segment.register=false");
    }

    @Test
    void aClientOnlyPublisherIsRefusedOnMooncakeWhereEveryPublisherMountsItsOwnCapacity() {
        assertRefusesToStart(
                PublisherApplication.class,
                DataplaneSettingsException.class,
                "relay.segment.role=client on relay.dataplane.engine=mooncake",
                "--relay.dataplane.engine=mooncake",
                "--relay.dataplane.mooncake.master=127.0.0.1:50051",
                "--relay.segment.role=client",
                "--relay.segment.size=0B",
                "--relay.staging.mode=file",
                "--relay.segment.register=false");
    }
}
