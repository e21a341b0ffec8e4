package io.weightrelay.loader.registration;

import static io.weightrelay.loader.registration.TestBytes.crc;
import static io.weightrelay.loader.registration.TestBytes.fill;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StaleSegmentException;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An engine that restarted and registers the same receive buffers again keeps their memory: the
 * loader renews the segment (the same file, no page faulted again) instead of destroying it and
 * making a new one, and a write a peer addressed to the earlier registration is refused ({@code
 * STALE_SEGMENT}) instead of landing in the new registration's bytes, over tcp and from a loader
 * beside it that maps the file. Uses the machine's Redis under a key prefix of its own.
 */
class ReceiveSegmentRenewalTest {
    private static final int MIB = 1 << 20;
    private static final Duration WAIT = Duration.ofSeconds(60);

    private final String prefix = RedisTestSupport.uniqueKeyPrefix("loader-renewal");
    private Dataplane loader;
    private Dataplane neighbour;
    private Dataplane remote;

    @BeforeEach
    void open() {
        loader = TestDataplane.open("rollout-0", prefix);
        neighbour = TestDataplane.open("rollout-0", prefix); // same node: maps the segment's file
        remote = TestDataplane.open("trainer-0", prefix); // another node: writes over tcp
    }

    @AfterEach
    void close() {
        remote.close();
        neighbour.close();
        loader.close();
        RedisTestSupport.deleteKeys(prefix);
    }

    @Test
    void aReRegisteredInstanceKeepsItsReceiveMemoryAndRefusesTheEarlierIncarnation()
            throws Exception {
        RegistrationManager<Segment> registrations =
                new RegistrationManager<>(new ReceiveSegmentRegistrar(loader));
        RegistrationKey first = new RegistrationKey(1, "i0", "w0", "recv-i0-w0", 2 * MIB);
        Segment receive = registrations.acquirePersistent(first);
        Object inode = Files.getAttribute(receive.shmPath(), "unix:ino");
        List<Dataplane> peers = List.of(neighbour, remote);
        List<Segment> sources =
                List.of(source(neighbour, "src-neighbour", 1), source(remote, "src-remote", 2));
        for (int i = 0; i < peers.size(); i++) {
            // each peer now holds the descriptor of the first registration
            peers.get(i).engine().transfer(List.of(write(sources.get(i), receive)), WAIT);
        }
        fill(receive.byteBuffer(), 9);
        long before = crc(receive.byteBuffer());

        // The engine restarted and registers the same buffer at epoch 2.
        assertThat(registrations.renew("i0", 2, List.of(first.atEpoch(2)))).isEqualTo(1);
        assertThat(registrations.invalidateExcept("i0", 2)).isZero();
        assertThat(registrations.acquirePersistent(first.atEpoch(2))).isSameAs(receive);
        assertThat(registrations.stats().registered()).as("nothing registered anew").isEqualTo(1);
        assertThat(registrations.snapshot())
                .containsExactly(
                        new RegistrationManager.Snapshot(
                                first.atEpoch(2), RegistrationState.PERSISTENT));
        assertThat(Files.getAttribute(receive.shmPath(), "unix:ino"))
                .as("the same file, its pages already faulted")
                .isEqualTo(inode);
        assertThat(loader.segment(receive.name())).contains(receive);

        // Late writes addressed to the first registration land nowhere.
        for (int i = 0; i < peers.size(); i++) {
            Dataplane peer = peers.get(i);
            Segment from = sources.get(i);
            assertThatThrownBy(() -> peer.engine().transfer(List.of(write(from, receive)), WAIT))
                    .as("a write with the earlier incarnation from %s", peer.nodeLabel())
                    .isInstanceOf(StaleSegmentException.class);
        }
        assertThat(crc(receive.byteBuffer())).isEqualTo(before);

        // Having read the new descriptor, the peers reach the same memory.
        for (int i = 0; i < peers.size(); i++) {
            peers.get(i).engine().transfer(List.of(write(sources.get(i), receive)), WAIT);
            assertThat(crc(receive.byteBuffer(0, MIB))).isEqualTo(crc(sources.get(i).byteBuffer()));
        }
        // Renewed once more: a probe through the earlier resolution reads the descriptor again.
        assertThat(registrations.renew("i0", 3, List.of(first.atEpoch(3)))).isEqualTo(1);
        neighbour.engine().probe(receive.name());
        neighbour.engine().transfer(List.of(write(sources.get(0), receive)), WAIT);
        assertThat(registrations.unregisterInstance("i0")).hasSize(1);
        assertThat(receive.shmPath()).doesNotExist();
    }

    @Test
    void aBufferDeclaredWithAnotherSizeIsMadeAnew() throws Exception {
        RegistrationManager<Segment> registrations =
                new RegistrationManager<>(new ReceiveSegmentRegistrar(loader));
        RegistrationKey first = new RegistrationKey(1, "i0", "w0", "recv-i0-w0", 2 * MIB);
        Segment old = registrations.acquirePersistent(first);
        Path file = old.shmPath();
        Object inode = Files.getAttribute(file, "unix:ino");
        RegistrationKey larger = new RegistrationKey(2, "i0", "w0", "recv-i0-w0", 4 * MIB);

        assertThat(registrations.renew("i0", 2, List.of(larger))).isZero();
        assertThat(registrations.invalidateExcept("i0", 2)).isEqualTo(1);
        Segment made = registrations.acquirePersistent(larger);
        assertThat(made).isNotSameAs(old);
        assertThat(made.size()).isEqualTo(4L * MIB);
        assertThat(Files.getAttribute(file, "unix:ino")).isNotEqualTo(inode);
        registrations.unregisterInstance("i0");
    }

    private static Segment source(Dataplane peer, String name, int seed) {
        Segment s = peer.createReceiveSegment(name, MIB);
        fill(s.byteBuffer(), seed);
        return s;
    }

    private static TransferRequest write(Segment from, Segment to) {
        return TransferRequest.write(from, 0, to.name(), 0, MIB);
    }
}
