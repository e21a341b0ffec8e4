package io.weightrelay.loader.instance;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.loader.LoaderApplication;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A loader whose node is configured opens its data plane as it starts, before any engine registers
 * (the registration then does not wait for it); one whose node comes with the first registration
 * opens nothing until then. Uses the machine's Redis under a key prefix of its own.
 */
class DataplaneOpenedAheadTest {

    private static ConfigurableApplicationContext start(String... extra) {
        String prefix = "wr:test:open-ahead:" + UUID.randomUUID() + ":";
        String[] base = {
            "--server.port=0",
            "--relay.dataplane.key-prefix=" + prefix,
            "--relay.loader.control-url=http://127.0.0.1:9",
            "--relay.loader.map-node-segments-every=0s"
        };
        String[] args = new String[base.length + extra.length];
        System.arraycopy(base, 0, args, 0, base.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        return new SpringApplicationBuilder(LoaderApplication.class).run(args);
    }

    @Test
    void aLoaderOnAConfiguredNodeOpensItsDataPlaneBeforeAnyRegistration() throws Exception {
        try (ConfigurableApplicationContext loader =
                start("--relay.dataplane.node-label=node-ahead")) {
            DataplaneHolder holder = loader.getBean(DataplaneHolder.class);
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (holder.dataplane() == null && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            Dataplane open = holder.dataplane();
            assertThat(open).as("opened without a registration").isNotNull();
            assertThat(open.nodeLabel()).isEqualTo("node-ahead");
            assertThat(holder.registrations()).isNotNull();
            assertThat(holder.open("node-ahead")).as("the registration finds it").isSameAs(open);
        }
    }

    @Test
    void withoutAConfiguredNodeNothingOpensBeforeTheFirstRegistration() throws Exception {
        try (ConfigurableApplicationContext loader = start()) {
            Thread.sleep(500);
            assertThat(loader.getBean(DataplaneHolder.class).dataplane()).isNull();
        }
    }
}
