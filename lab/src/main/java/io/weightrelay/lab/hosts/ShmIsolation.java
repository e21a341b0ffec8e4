package io.weightrelay.lab.hosts;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Proves from {@code /proc} that every process of the lab runs in its own host and maps no
 * shared-memory file of another host: its network and mount namespaces are its host's, and every
 * mapping on any host's {@code /dev/shm} tmpfs (or on the machine's own) is on its host's.
 */
public final class ShmIsolation {

    /** What the check saw: processes checked and their mappings of shared-memory files. */
    public record Report(int processes, int shmMappings, List<String> violations) {
        public boolean clean() {
            return violations.isEmpty();
        }
    }

    private ShmIsolation() {}

    /** Checks every live process the lab started. */
    public static Report check(HostLab lab) {
        Map<String, String> hostOfDevice = new HashMap<>();
        for (Host h : lab.hosts()) {
            hostOfDevice.put(h.shmDevice(), h.name());
        }
        String machineShm = machineShmDevice();
        if (machineShm != null) {
            hostOfDevice.putIfAbsent(machineShm, "the machine's own /dev/shm");
        }
        List<String> violations = new ArrayList<>();
        int processes = 0;
        int mappings = 0;
        for (HostProcess p : lab.processes()) {
            if (!p.isAlive()) {
                continue;
            }
            Host own = p.host();
            Path proc = Path.of("/proc", Long.toString(p.pid()));
            String net = link(proc.resolve("ns/net"));
            String mnt = link(proc.resolve("ns/mnt"));
            String wantNet = link(Path.of("/proc", Long.toString(own.anchorPid()), "ns/net"));
            if (net == null || mnt == null) {
                continue; // ended meanwhile
            }
            processes++;
            if (!net.equals(wantNet)) {
                violations.add(p.name() + " runs in network namespace " + net + ", not " + own);
            }
            if (!mnt.equals(own.mountNamespace())) {
                violations.add(p.name() + " runs in mount namespace " + mnt + ", not " + own);
            }
            List<String> maps;
            try {
                maps = Files.readAllLines(proc.resolve("maps"));
            } catch (IOException e) {
                continue;
            }
            for (String line : maps) {
                String[] f = line.trim().split("\\s+", 6);
                if (f.length < 6) {
                    continue;
                }
                String device = decimalDevice(f[3]);
                String owner = hostOfDevice.get(device);
                boolean shmPath = f[5].startsWith("/dev/shm/");
                if (owner == null && !shmPath) {
                    continue;
                }
                mappings++;
                if (!device.equals(own.shmDevice())) {
                    violations.add(
                            p.name()
                                    + " (in "
                                    + own.name()
                                    + ") maps "
                                    + f[5]
                                    + " of "
                                    + (owner == null ? "device " + device : owner));
                }
            }
        }
        return new Report(processes, mappings, List.copyOf(violations));
    }

    /** {@code /proc/PID/maps} writes devices as hex {@code mm:nn}; mountinfo as decimal. */
    static String decimalDevice(String hex) {
        int colon = hex.indexOf(':');
        if (colon < 0) {
            return hex;
        }
        return Integer.parseInt(hex.substring(0, colon), 16)
                + ":"
                + Integer.parseInt(hex.substring(colon + 1), 16);
    }

    /** The device of {@code /dev/shm} in this process's own mount namespace, or null. */
    static String machineShmDevice() {
        return HostLab.shmDeviceOf(Path.of("/proc/self/mountinfo"));
    }

    private static String link(Path p) {
        try {
            return Files.readSymbolicLink(p).toString();
        } catch (IOException e) {
            return null;
        }
    }
}
