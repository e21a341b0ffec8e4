package io.weightrelay.dataplane.internal;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The identity of the host a data plane runs on, as far as shared memory is concerned: two engines
 * may use the local transport only if they see the same files. It is the machine id ({@code
 * /etc/machine-id}, else the host name), the real path of the shm directory and the device that
 * directory lives on, so containers or network-namespace "hosts" of one machine that each mount
 * their own tmpfs on {@code /dev/shm} get different identities although their machine id and path
 * are the same.
 */
public final class HostIdentity {
    private HostIdentity() {}

    /** Derives the identity for segment files under {@code shmDir}. */
    public static String derive(Path shmDir) {
        String machine = machineId();
        Path real;
        try {
            real = shmDir.toRealPath();
        } catch (IOException e) {
            throw new IllegalArgumentException("shmDir " + shmDir + " is not usable", e);
        }
        Object device;
        try {
            device = Files.getAttribute(real, "unix:dev");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            device = "?";
        }
        return machine + ":" + real + ":" + device;
    }

    private static String machineId() {
        for (String file : new String[] {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
            try {
                String id = Files.readString(Path.of(file)).trim();
                if (!id.isEmpty()) {
                    return id;
                }
            } catch (IOException | RuntimeException e) {
                // try the next source
            }
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            String env = System.getenv("HOSTNAME");
            return env == null || env.isBlank() ? "unknown-host" : env;
        }
    }
}
