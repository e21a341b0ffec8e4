package io.weightrelay.lab.hosts;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.TestJvm;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hosts themselves, without the services: each has its own addresses and its own {@code
 * /dev/shm}, a byte sent between two hosts is counted on the data-plane network and nowhere else,
 * and nothing of a run (or of a crashed earlier run) is left behind. Needs root, as CI runs; fails
 * with the reason otherwise.
 */
class HostLabTest {

    static final String PREFIX = System.getProperty("relay.lab.prefix", "wr-labtest");
    private static final int BYTES = 3_000_000;

    @Test
    void hostsAreIsolatedCountedAndRemoved(@TempDir Path logs) throws Exception {
        String run;
        try (HostLab lab = HostLab.create(PREFIX, List.of("alpha", "beta"), 16L << 20)) {
            run = lab.run();
            Host a = lab.host("alpha");
            Host b = lab.host("beta");
            assertThat(a.dataAddress()).isEqualTo("198.19.0.1");
            assertThat(b.controlAddress()).isEqualTo("198.18.0.2");
            assertThat(a.shmDevice()).isNotEqualTo(b.shmDevice());

            String probe = "/dev/shm/" + PREFIX + "-" + run + "-probe";
            assertThat(a.run(List.of("touch", probe), 10).ok()).isTrue();
            assertThat(a.run(List.of("test", "-e", probe), 10).ok()).isTrue();
            assertThat(b.run(List.of("test", "-e", probe), 10).ok())
                    .as("another host does not see the file")
                    .isFalse();
            assertThat(Files.exists(Path.of(probe))).as("the machine does not see it").isFalse();

            HostProcess sink = startSink(b, "sink", logs);
            awaitListening(a, b.dataAddress(), 7070, sink);
            LinkCounters before = lab.counters();
            Commands.Result sent =
                    a.run(
                            List.of(
                                    "bash",
                                    "-c",
                                    "exec 3<>/dev/tcp/"
                                            + b.dataAddress()
                                            + "/7070 && head -c "
                                            + BYTES
                                            + " /dev/zero >&3 && exec 3>&- && sleep 0.5"),
                            30);
            assertThat(sent.ok()).as(sent.out()).isTrue();
            sink.close();
            LinkCounters delta = lab.counters().minus(before);
            LinkCounters.HostLinks alpha = delta.hosts().get("alpha");
            // Never less than was sent; more only by what TCP itself resends: on a loaded machine
            // a tail-loss probe may send the last segment (up to 64 KiB with GSO) twice.
            assertThat(alpha.dataSent().tcpPayload())
                    .as("the payload alpha sent, from its interface's counters")
                    .isBetween((long) BYTES, BYTES + (64L << 10));
            assertThat(delta.controlSent().bytes()).as("nothing on the control network").isZero();

            ShmIsolation.Report report = ShmIsolation.check(lab);
            assertThat(report.violations()).isEmpty();
        }
        assertThat(Commands.run(List.of("ip", "netns", "list"), 10).out())
                .doesNotContain(PREFIX + "-" + run);
    }

    /**
     * A link shaped both ways carries each direction through its own token bucket: 8 MB at 40
     * Mbit/s (5 MB/s) take 1.6 s either way, of which the writer waits at least 0.76 s even if its
     * socket buffer (at most 4 MiB here) takes the rest at once; the test asks for 0.3 s, a bound a
     * loaded machine only lengthens (unshaped, a veth moves 8 MB in milliseconds). Each end's queue
     * counted the bytes.
     */
    @Test
    void aLinkShapedBothWaysLimitsWhatTheHostSendsAndReceives(@TempDir Path logs) throws Exception {
        int bytes = 8_000_000;
        try (HostLab lab = HostLab.create(PREFIX, List.of("alpha", "beta"), 16L << 20)) {
            Host a = lab.host("alpha");
            Host b = lab.host("beta");
            lab.shapeDataLinkBothWays("alpha", "40mbit");
            for (Host[] pair : List.of(new Host[] {a, b}, new Host[] {b, a})) {
                Host from = pair[0];
                Host to = pair[1];
                HostProcess sink = startSink(to, "sink-" + to.name(), logs);
                awaitListening(from, to.dataAddress(), 7070, sink);
                Commands.Result sent =
                        from.run(
                                List.of(
                                        "bash",
                                        "-c",
                                        "exec 3<>/dev/tcp/"
                                                + to.dataAddress()
                                                + "/7070 && s=$(date +%s%N) && head -c "
                                                + bytes
                                                + " /dev/zero >&3 && exec 3>&- && echo"
                                                + " $(( $(date +%s%N) - s ))"),
                                30);
                assertThat(sent.ok()).as(sent.out()).isTrue();
                double seconds = Long.parseLong(sent.out().strip()) / 1e9;
                // The sender's last bytes may still sit in its socket buffer and the shaped queue
                // when it closes: the sink ends by itself once it has read them all (to EOF).
                // Closing it earlier would reset the connection and lose them from the counts.
                long drained = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                while (sink.isAlive() && System.nanoTime() < drained) {
                    Thread.sleep(20);
                }
                assertThat(sink.isAlive())
                        .as("the sink read everything %s sent, to EOF", from.name())
                        .isFalse();
                sink.close();
                assertThat(seconds)
                        .as("%s -> %s through a 5 MB/s link", from.name(), to.name())
                        .isGreaterThan(0.3);
            }
            List<tools.jackson.databind.JsonNode> q = lab.dataLinkQdiscs("alpha");
            assertThat(q.get(0).path("kind").asString()).isEqualTo("tbf");
            assertThat(q.get(0).path("bytes").asLong()).as("alpha sent").isGreaterThan(bytes);
            assertThat(q.get(1).path("bytes").asLong()).as("alpha received").isGreaterThan(bytes);
        }
    }

    @Test
    void leftoversOfADeadRunAreRemoved() {
        String dead = PREFIX + "-deadbeef-ghost";
        Commands.check(List.of("ip", "netns", "add", dead));
        List<String> removed = HostLab.cleanLeftovers(PREFIX);
        assertThat(removed).contains(dead);
        assertThat(Commands.run(List.of("ip", "netns", "list"), 10).out()).doesNotContain(dead);
    }

    /** A {@link Sink} on {@code host}'s data address, port 7070. */
    private static HostProcess startSink(Host host, String name, Path logs) {
        return host.start(
                name, TestJvm.command("32m", Sink.class, host.dataAddress(), "7070"), logs);
    }

    private static void awaitListening(Host from, String address, int port, HostProcess of)
            throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            assertThat(of.isAlive()).as(of.tail()).isTrue();
            if (new java.io.File("/proc/" + of.pid() + "/net/tcp").exists()
                    && from.run(
                                    List.of(
                                            "bash",
                                            "-c",
                                            "exec 3<>/dev/tcp/" + address + "/" + (port + 1)),
                                    5)
                            .ok()) {
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("sink not listening: " + of.tail());
    }

    /** Reads one connection to its end: {@code Sink ADDRESS PORT}; PORT+1 only says it listens. */
    public static final class Sink {
        public static void main(String[] args) throws Exception {
            InetAddress address = InetAddress.getByName(args[0]);
            int port = Integer.parseInt(args[1]);
            try (ServerSocket data = new ServerSocket(port, 1, address);
                    ServerSocket ready = new ServerSocket(port + 1, 1, address)) {
                Thread t = new Thread(() -> acceptForever(ready));
                t.setDaemon(true);
                t.start();
                try (Socket s = data.accept();
                        InputStream in = s.getInputStream()) {
                    in.transferTo(java.io.OutputStream.nullOutputStream());
                }
            }
        }

        private static void acceptForever(ServerSocket ready) {
            try {
                while (true) {
                    ready.accept().close();
                }
            } catch (java.io.IOException e) {
                // closed
            }
        }
    }
}
