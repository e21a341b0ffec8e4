package io.weightrelay.testkit.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FreePortTest {

    @Test
    void aPortForAChildIsNeverOneTheKernelCanHandOutForBindZeroMeanwhile() throws IOException {
        int ephemeralLow =
                Integer.parseInt(
                        Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))
                                .get(0)
                                .trim()
                                .split("\\s+")[0]);
        Set<Integer> ports = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            int port = ServiceProcess.freePort();
            assertThat(port).isBetween(1024, ephemeralLow - 1);
            assertThat(ports.add(port)).as("port %d handed out twice", port).isTrue();
            // What a data-plane engine does while the child starts: bind(0) gets another port.
            try (ServerSocket engine = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                assertThat(engine.getLocalPort()).isNotIn(ports);
            }
        }
    }

    @Test
    void aPortInUseIsNotHandedOut() throws IOException {
        int port = ServiceProcess.freePort();
        try (ServerSocket bound = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            for (int i = 0; i < 50; i++) {
                assertThat(ServiceProcess.freePort()).isNotEqualTo(bound.getLocalPort());
            }
        }
    }
}
