package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.plan.Demands;

/** What the lab tests hold every update to, stated once. */
final class Delivery {

    private Delivery() {}

    /** {@code update} on a lab whose placement demands {@code demands}: as below. */
    static void exactAndSinglePull(LabCluster.Updates update, Demands demands) {
        exactAndSinglePull(
                update.bytesReceived(),
                demands.targetStoredBytes(),
                update.storeBytesRead(),
                demands.storeBytes());
    }

    /**
     * The workers received exactly the bytes the target placement stores, and the store was read
     * exactly once per byte they needed (single pull).
     */
    static void exactAndSinglePull(long received, long placed, long storeRead, long storeNeeded) {
        assertThat(received)
                .as("delivery equals what the target placement stores")
                .isEqualTo(placed);
        assertThat(storeRead)
                .as("single pull: the store was read exactly once per needed byte")
                .isEqualTo(storeNeeded);
    }
}
