package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.demo.ModeResult;
import io.weightrelay.reshard.plan.Demands;

/** What the lab tests hold every update to, stated once. */
final class Delivery {

    private Delivery() {}

    /** {@code update} on a lab whose placement demands {@code demands}: as below. */
    static void exactAndSinglePull(LabUpdate update, Demands demands) {
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

    /**
     * What a multi-host run holds to on any engine: its six hosts; every byte verified, and a
     * restarted loader's too; delivery exact and single pull; the data-plane interfaces carried
     * what the engines counted as moved between hosts plus their framing only (at most {@code
     * framingShare} of it and {@code handshakeBytes}); no process runs outside its host or maps
     * another host's shared memory; no secret reaches a log.
     */
    static void acrossHosts(ModeResult r, double framingShare, long handshakeBytes) {
        assertThat(r.hosts())
                .as("redis, control-api, two trainer and two rollout hosts")
                .isEqualTo(6);
        assertThat(r.bytesVerified()).as("bytes checked against the trainer's").isPositive();
        assertThat(r.restartBytesVerified())
                .as("a restarted loader loads the active generation with no republish")
                .isPositive();
        exactAndSinglePull(
                r.bytesReceived(), r.targetStoredBytes(), r.storeBytesRead(), r.storeBytesNeeded());
        long wire = r.dataplane().tcpPayload();
        assertThat(wire - r.engineTcpBytes())
                .as(
                        "TCP payload on the data-plane interfaces (%d) minus what the engines"
                                + " counted as moved between nodes (%d): their framing only",
                        wire, r.engineTcpBytes())
                .isBetween(0L, (long) (r.engineTcpBytes() * framingShare) + handshakeBytes);
        assertThat(r.isolation().violations())
                .as("no process maps another host's shared memory, or runs outside its host")
                .isEmpty();
        assertThat(r.secretsInLogs())
                .as("every token is bound to one identity and reaches processes only in files")
                .isEmpty();
        assertThat(r.verified()).isTrue();
    }
}
