package io.weightrelay.loader.instance;

import static io.weightrelay.service.test.StartRefusal.assertRefusesToStart;

import io.weightrelay.loader.LoaderApplication;
import io.weightrelay.service.dataplane.DataplaneSettingsException;
import org.junit.jupiter.api.Test;

/** The loader refuses to start with an address other hosts cannot reach, naming the property. */
class AdvertisedAddressRefusalTest {

    private static final String SECRET = "--relay.dataplane.secret=loader-refusal-secret-012345";

    @Test
    void aWildcardBindNeedsAnAdvertiseHost() {
        assertRefusesToStart(
                LoaderApplication.class,
                DataplaneSettingsException.class,
                "relay.dataplane.bind-host=:: binds every interface",
                "--relay.dataplane.bind-host=::");
    }

    @Test
    void aLoopbackAdvertiseUrlIsRefusedWhilePeersAreOnOtherHosts() {
        assertRefusesToStart(
                LoaderApplication.class,
                DataplaneSettingsException.class,
                "relay.loader.advertise-url=http://localhost:8082 is a loopback address",
                "--relay.dataplane.multi-host=true",
                "--relay.dataplane.bind-host=0.0.0.0",
                "--relay.dataplane.advertise-host=loader-0",
                SECRET,
                "--relay.loader.advertise-url=http://localhost:8082");
    }

    @Test
    void peersOnOtherHostsNeedTheSecret() {
        assertRefusesToStart(
                LoaderApplication.class,
                DataplaneSettingsException.class,
                "set relay.dataplane.secret-file",
                "--relay.dataplane.multi-host=true",
                "--relay.dataplane.advertise-host=loader-0");
    }
}
