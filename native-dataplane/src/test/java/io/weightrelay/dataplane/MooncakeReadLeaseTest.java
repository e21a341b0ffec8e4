package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Mooncake store client's read lease, on the real master: a range that lands after the lease
 * the master granted the read ran out ({@code LEASE_EXPIRED}, -707) is read once more with a fresh
 * lease; a second expiry fails the read naming the object ({@link ReadLeaseExpiredException}).
 *
 * <p>How expiry is made to happen: the pinned wheel's {@code get_into_ranges} renews the lease at
 * half what is left of it while the bytes move, so a read expires only when its waiting thread
 * cannot renew in time. The first test stops the object's owner (its agent: the bytes stall) and,
 * once the reader waits on it, the master for longer than the lease (the reader's renewal hangs);
 * the owner is let go first, so the bytes land while the renewal still waits, and the renewal comes
 * back with a lease counted from when it was sent, already over. The second runs on a master whose
 * lease is 0 ms, which every read outlasts.
 */
class MooncakeReadLeaseTest extends EngineTestSupport {
    private static final int MIB = 1 << 20;

    @RegisterExtension static final MooncakeTestEngines mooncake = new MooncakeTestEngines();

    /** A master whose reads are leased for 0 ms. */
    @RegisterExtension
    static final MooncakeTestEngines expiring = new MooncakeTestEngines(Duration.ZERO);

    @Override
    protected TestEngine engine() {
        return mooncake;
    }

    @Test
    void aRangeThatLandedAfterItsLeaseRanOutIsReadAgainWithAFreshLease() throws Exception {
        Dataplane owner = dp("node-b");
        Dataplane reader = dp("node-a");
        String k = key("slow");
        put(owner, k, MIB, 7);
        Segment into = reader.createReceiveSegment("into", MIB);
        // a first read, so that the reader's Transfer Engine knows the owner's segment already
        assertThat(reader.store().getIntoRanges(k, List.of(new ReadRange(0, 4096, into, 0))))
                .containsExactly(4096);
        MooncakeStoreClient store = (MooncakeStoreClient) reader.store();
        assertThat(store.leaseRetries()).isZero();

        long ownerAgent = ((MooncakeDataplane) owner).agent().ready().pid();
        long master = mooncake.master().pid();
        signal("STOP", ownerAgent);
        CompletableFuture<long[]> read;
        try {
            read =
                    CompletableFuture.supplyAsync(
                            () ->
                                    reader.store()
                                            .getIntoRanges(
                                                    k, List.of(new ReadRange(0, MIB, into, 0))));
            Thread.sleep(1_000); // the reader took its lease and waits for the owner's bytes
            signal("STOP", master);
            // longer than the 500 ms lease: the reader's renewal now waits for the master
            Thread.sleep(1_500);
            signal("CONT", ownerAgent);
            Thread.sleep(3_000); // the bytes land while the renewal still waits
        } finally {
            signal("CONT", ownerAgent);
            signal("CONT", master);
        }
        assertThat(read.get(60, TimeUnit.SECONDS)).containsExactly(MIB);
        Patterns.assertHolds(into.byteBuffer(), 0, MIB, 7);
        assertThat(store.leaseRetries()).as("reads retried after LEASE_EXPIRED").isEqualTo(1);
    }

    @Test
    void aRangeWhoseLeaseRunsOutInTheRetryTooFailsTheReadNamingTheObject() {
        Dataplane owner = open(expiring, "node-b");
        Dataplane reader = open(expiring, "node-a");
        String k = key("expiring");
        put(owner, k, MIB, 3);
        Segment into = reader.createReceiveSegment("into", MIB);

        assertThatThrownBy(
                        () ->
                                reader.store()
                                        .getIntoRanges(
                                                k,
                                                List.of(
                                                        new ReadRange(0, 4096, into, 0),
                                                        new ReadRange(4096, 0, into, 4096),
                                                        new ReadRange(65536, 4096, into, 8192))))
                .isInstanceOfSatisfying(
                        ReadLeaseExpiredException.class,
                        e -> {
                            assertThat(e.key()).isEqualTo(k);
                            assertThat(e.objectOffsets()).containsExactly(0L, 65536L);
                            assertThat(e.error()).isEqualTo(DataplaneError.TIMEOUT);
                            assertThat(e.getMessage())
                                    .contains("'" + k + "'", "LEASE_EXPIRED", "retry");
                        });
        assertThat(((MooncakeStoreClient) reader.store()).leaseRetries()).isEqualTo(1);
        assertThat(reader.store().exists(k)).isTrue(); // the object is untouched
    }

    /** Stores {@code size} bytes of pattern {@code seed} under {@code key}, in owner's segment. */
    private static void put(Dataplane owner, String key, int size, int seed) {
        Segment src = owner.createReceiveSegment("src", size);
        Patterns.fill(src.byteBuffer(), 0, size, seed);
        owner.store()
                .putFrom(
                        key,
                        src,
                        0,
                        size,
                        ReplicateConfig.preferLocal(((MooncakeDataplane) owner).storeSegment()));
    }

    private static Dataplane open(MooncakeTestEngines on, String nodeLabel) {
        return scope.closeAfter(
                Dataplane.open(
                        TestEngines.config(nodeLabel, scope.prefix())
                                .engine(DataplaneEngine.MOONCAKE)
                                .mooncake(on.config(64L * MIB, MooncakeTestEngines.LEASE_WAIT))
                                .build()));
    }

    private static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).start();
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("kill -" + signal + " " + pid + " failed");
        }
    }
}
