package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.time.Duration;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the data-plane tests of every engine share: a subclass names the engine under test ({@link
 * TestEngine}: how to open one, how a test gets store capacity and how it gets local memory, the
 * three things the engines do differently); this class gives each test its engines (closed after
 * it), its key prefix and the helpers. The tests themselves are in {@link EngineConformanceTest}
 * (what every engine must do) and in one class per engine for what only that engine has ({@link
 * BuiltinEngineOnlyTest}, {@link MooncakeEngineOnlyTest}). Keys are under the test's own prefix, so
 * engines whose directory ignores the key prefix (Mooncake's master) keep the tests apart too.
 */
abstract class EngineTestSupport {
    @RegisterExtension static final TestScope scope = new TestScope();
    protected static final Duration WAIT = Duration.ofSeconds(60);

    /**
     * Same node label (the built-in engine's local transport) or another one (its tcp); the
     * Mooncake engine moves bytes over its own transport either way, and counts them as the
     * built-in engine does.
     */
    enum Transport {
        LOCAL,
        TCP
    }

    protected static String peerLabel(Transport t) {
        return t == Transport.LOCAL ? "node-a" : "node-b";
    }

    /** The engine under test. */
    protected abstract TestEngine engine();

    /** Opens an engine of the implementation under test, in this JVM. */
    protected Dataplane open(String nodeLabel, String keyPrefix) {
        return engine().open(nodeLabel, keyPrefix);
    }

    /** See {@link TestEngine#storeCapacity}. */
    protected String storeCapacity(Dataplane dp, String name, long size) {
        return engine().storeCapacity(dp, name, size);
    }

    /** See {@link TestEngine#memory}. */
    protected LocalMemory memory(Dataplane dp, String name, int size) {
        return engine().memory(dp, name, size);
    }

    protected Dataplane dp(String label) {
        Dataplane dp = open(label, scope.prefix());
        scope.closeAfter(dp);
        return dp;
    }

    /** {@code name} under this test's prefix. */
    protected static String key(String name) {
        return scope.prefix() + name;
    }

    protected static ByteBuffer view(LocalMemory m) {
        return m instanceof Segment s ? s.byteBuffer() : ((RegisteredBuffer) m).byteBuffer();
    }

    protected static int crc32c(ByteBuffer b, int offset, int length) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b.slice(offset, length));
        return (int) crc.getValue();
    }

    /**
     * {@code d} counts {@code read} bytes read and {@code written} written over the transport
     * {@code t}, and nothing over the other one.
     */
    protected static void assertTransport(Counters d, Transport t, long read, long written) {
        if (t == Transport.LOCAL) {
            assertThat(d.localRead()).isEqualTo(read);
            assertThat(d.localWritten()).isEqualTo(written);
            assertThat(d.tcpTotal()).isZero();
        } else {
            assertThat(d.tcpRead()).isEqualTo(read);
            assertThat(d.tcpWritten()).isEqualTo(written);
            assertThat(d.localRead() + d.localWritten()).isZero();
        }
    }

    protected LocalMemory filled(Dataplane dp, String name, int size, int seed) {
        LocalMemory m = memory(dp, name, size);
        Patterns.fill(view(m), 0, size, seed);
        return m;
    }
}
