package io.weightrelay.dataplane;

import java.util.concurrent.atomic.LongAdder;

/**
 * The byte counters of a {@link MooncakeDataplane}: Mooncake keeps none per transport, so this data
 * plane counts the bytes it asked Mooncake to move, when Mooncake reported them moved.
 *
 * <p>What counts as which transport: a store put or read is local when the object's replicas are
 * all in this data plane's own mounted segment (the agent's memory: no other process serves a
 * byte), tcp otherwise; a Transfer Engine write or read is local when its target segment is on this
 * node (the same node label and shared memory, the built-in engine's local transport), tcp
 * otherwise (another node's engine, reached through Mooncake's transport; with protocol {@code
 * rdma} read "tcp" as "the network transport"). This is where the bytes were, not which path
 * Mooncake chose inside its own process. The {@code tcpServed*} counters stay 0: Mooncake's
 * transport serves peers without telling the agent. Thread safe.
 */
final class MooncakeCounters {
    private final LongAdder localRead = new LongAdder();
    private final LongAdder localWritten = new LongAdder();
    private final LongAdder tcpRead = new LongAdder();
    private final LongAdder tcpWritten = new LongAdder();

    void read(boolean local, long bytes) {
        (local ? localRead : tcpRead).add(bytes);
    }

    void written(boolean local, long bytes) {
        (local ? localWritten : tcpWritten).add(bytes);
    }

    Counters snapshot() {
        return new Counters(
                localRead.sum(), localWritten.sum(), tcpRead.sum(), tcpWritten.sum(), 0, 0);
    }
}
