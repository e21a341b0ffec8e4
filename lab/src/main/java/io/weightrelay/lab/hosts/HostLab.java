package io.weightrelay.lab.hosts;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * N hosts on this machine. Each host is a network namespace {@code <prefix>-<run>-<host>} with two
 * interfaces, {@code ctl0} on the control network 198.18.0.0/24 (REST, Redis) and {@code dp0} on
 * the data-plane network 198.19.0.0/24 (the Transfer Engine's tcp transport), and a private tmpfs
 * on {@code /dev/shm}. The two bridges live in a namespace of their own, {@code
 * <prefix>-<run>-net}, so nothing is added to the machine's own network namespace, and their ports'
 * counters tell what each host sent and received on each network.
 *
 * <p>Everything is removed by {@link #close()}, also on a failure while setting up and, through a
 * shutdown hook, on Ctrl-C. A run holds a lock file ({@code /run/weight-relay-lab/<prefix>-<run>
 * .lock}) while it lives; {@link #create} first removes the namespaces of runs with the same prefix
 * whose lock nobody holds any more (a run that crashed or was killed). Needs root.
 */
public final class HostLab implements AutoCloseable {

    /** The prefix of the product's lab; tests and helpers use their own. */
    public static final String DEFAULT_PREFIX = "wr-lab";

    static final Path LOCKS = Path.of("/run/weight-relay-lab");
    private static final Pattern PREFIX = Pattern.compile("wr-[a-z0-9-]{1,20}");
    private static final Pattern HOST_NAME = Pattern.compile("[a-z][a-z0-9-]{0,30}");
    private static final Set<String> OWN_RUNS = ConcurrentHashMap.newKeySet();
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final String prefix;
    private final String run;
    private final String network;
    private final Map<String, Host> hosts = new LinkedHashMap<>();
    private final List<String> namespaces = new ArrayList<>();
    private final List<HostProcess> processes = new CopyOnWriteArrayList<>();
    private final Thread hook;
    private FileChannel lockChannel;
    private FileLock lock;
    private boolean closed;

    private HostLab(String prefix) {
        this.prefix = prefix;
        this.run = UUID.randomUUID().toString().substring(0, 8);
        this.network = prefix + "-" + run + "-net";
        this.hook = new Thread(this::close, "host-lab-cleanup-" + run);
    }

    /**
     * This JVM's class path with every entry made absolute, for a JVM started in a host: a host's
     * process may run in another working directory, where a relative entry (a lab started as {@code
     * java -cp lab/target/lab.jar:...}) names nothing and its main class is not found.
     */
    public static String absoluteClassPath() {
        List<String> entries = new ArrayList<>();
        for (String entry :
                System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            entries.add(entry.isEmpty() ? entry : Path.of(entry).toAbsolutePath().toString());
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    /**
     * Makes the hosts {@code names} (in this order: host {@code i} gets 198.18.0.{i+1} and
     * 198.19.0.{i+1}), each with a {@code /dev/shm} of {@code shmBytes}.
     *
     * @throws HostLabException when not root, a tool is missing, or setting up failed (then
     *     everything made so far is removed)
     */
    public static HostLab create(String prefix, List<String> names, long shmBytes) {
        if (!PREFIX.matcher(prefix).matches()) {
            throw new IllegalArgumentException(
                    "prefix must match " + PREFIX + " (e.g. wr-lab): " + prefix);
        }
        if (names.isEmpty() || names.size() > 250 || Set.copyOf(names).size() != names.size()) {
            throw new IllegalArgumentException("need 1 to 250 distinct host names: " + names);
        }
        for (String n : names) {
            if (!HOST_NAME.matcher(n).matches()) {
                throw new IllegalArgumentException("host name must match " + HOST_NAME + ": " + n);
            }
        }
        requireRoot();
        cleanLeftovers(prefix);
        HostLab lab = new HostLab(prefix);
        try {
            lab.lock();
            Runtime.getRuntime().addShutdownHook(lab.hook);
            lab.build(names, shmBytes);
            return lab;
        } catch (RuntimeException | Error e) {
            lab.close();
            throw e;
        }
    }

    /** The hosts, in the order they were asked for. */
    public List<Host> hosts() {
        return List.copyOf(hosts.values());
    }

    public Host host(String name) {
        Host h = hosts.get(name);
        if (h == null) {
            throw new IllegalArgumentException("no host " + name + " in " + hosts.keySet());
        }
        return h;
    }

    /** This run's id: every namespace of it is named {@code <prefix>-<run>-...}. */
    public String run() {
        return run;
    }

    public String prefix() {
        return prefix;
    }

    /** Every process started in a host of this lab (living or not), in start order. */
    public List<HostProcess> processes() {
        return List.copyOf(processes);
    }

    HostProcess track(HostProcess p) {
        if (closed) {
            p.kill();
            throw new HostLabException("the lab is closed");
        }
        processes.add(p);
        return p;
    }

    /** Forgets a process that was killed on purpose (a crash the lab simulates). */
    public void forget(HostProcess p) {
        processes.remove(p);
    }

    /** The interface counters of every host, now. */
    public LinkCounters counters() {
        String out = Commands.check(List.of("ip", "-n", network, "-s", "-j", "link", "show"));
        Map<String, JsonNode> ports = new TreeMap<>();
        for (JsonNode link : JSON.readTree(out)) {
            ports.put(link.get("ifname").asString(), link.get("stats64"));
        }
        Map<String, LinkCounters.HostLinks> links = new LinkedHashMap<>();
        for (Host h : hosts.values()) {
            JsonNode data = ports.get("d" + h.index());
            JsonNode control = ports.get("c" + h.index());
            if (data == null || control == null) {
                throw new HostLabException("no bridge ports for " + h + " in " + network);
            }
            // A bridge port receives what its host sent.
            links.put(
                    h.name(),
                    new LinkCounters.HostLinks(
                            traffic(data.get("rx")),
                            traffic(data.get("tx")),
                            traffic(control.get("rx")),
                            traffic(control.get("tx"))));
        }
        return new LinkCounters(links);
    }

    private static LinkCounters.Traffic traffic(JsonNode side) {
        return new LinkCounters.Traffic(side.get("bytes").asLong(), side.get("packets").asLong());
    }

    /**
     * Stops every process (gracefully, then forcibly), ends the hosts' anchors (their tmpfs goes
     * with the last process in it) and deletes every namespace of this run. Idempotent; never
     * throws: what could not be removed is reported on stderr.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<HostProcess> all = new ArrayList<>(processes);
        Collections.reverse(all);
        all.forEach(HostProcess::stop);
        all.forEach(HostProcess::close);
        for (Host h : hosts.values()) {
            Process anchor = h.anchor();
            try {
                anchor.getOutputStream().close();
            } catch (IOException e) {
                // ended already
            }
            anchor.destroy();
        }
        List<String> reverse = new ArrayList<>(namespaces);
        Collections.reverse(reverse);
        for (String ns : reverse) {
            removeNamespace(ns);
        }
        if (lock != null) {
            try {
                lock.release();
                lockChannel.close();
                Files.deleteIfExists(lockFile(prefix, run));
            } catch (IOException e) {
                System.err.println("host lab: cannot remove " + lockFile(prefix, run) + ": " + e);
            }
        }
        OWN_RUNS.remove(run);
        if (Thread.currentThread() != hook) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException | IllegalArgumentException e) {
                // shutting down already, or never registered
            }
        }
    }

    /**
     * Removes the namespaces of earlier runs with {@code prefix} that no living process owns (their
     * lock file is gone or unlocked): kills what still runs in them and deletes them. Returns the
     * namespaces removed.
     */
    public static List<String> cleanLeftovers(String prefix) {
        Commands.Result list = Commands.run(List.of("ip", "netns", "list"), 30);
        if (!list.ok()) {
            throw new HostLabException("'ip netns list' failed: " + list.out());
        }
        Pattern mine = Pattern.compile("^" + Pattern.quote(prefix) + "-([0-9a-f]{8})-\\S+");
        Map<String, List<String>> byRun = new TreeMap<>();
        for (String line : list.out().split("\n")) {
            Matcher m = mine.matcher(line.trim());
            if (m.find()) {
                byRun.computeIfAbsent(m.group(1), r -> new ArrayList<>())
                        .add(m.group().split(" ")[0]);
            }
        }
        List<String> removed = new ArrayList<>();
        byRun.forEach(
                (run, names) -> {
                    if (OWN_RUNS.contains(run) || lockHeld(prefix, run)) {
                        return;
                    }
                    // Hosts first, the bridges' namespace last, as close() does.
                    names.sort((a, b) -> Boolean.compare(a.endsWith("-net"), b.endsWith("-net")));
                    for (String ns : names) {
                        removeNamespace(ns);
                        removed.add(ns);
                    }
                    System.err.println(
                            "host lab: removed " + names.size() + " namespaces of dead run " + run);
                });
        return removed;
    }

    /**
     * Fails with the exact reason when this process cannot make hosts: not root, without the
     * capabilities, or without a tool it runs.
     */
    public static void requireRoot() {
        String uid = status("Uid");
        String[] ids = uid == null ? new String[0] : uid.trim().split("\\s+");
        long euid = ids.length > 1 ? Long.parseLong(ids[1]) : -1;
        String does =
                "it creates network namespaces, a bridge and veth pairs (ip netns add, ip link add:"
                        + " CAP_NET_ADMIN) and mounts a private tmpfs on /dev/shm in each host's"
                        + " mount namespace (unshare -m, mount: CAP_SYS_ADMIN)";
        if (euid != 0) {
            throw new HostLabException(
                    "the multi-host lab needs root and this process runs as uid "
                            + euid
                            + " ("
                            + System.getProperty("user.name")
                            + "): "
                            + does
                            + ". Run it as root, e.g. sudo ./relay demo --hosts");
        }
        String capEff = status("CapEff");
        if (capEff != null) {
            long caps = Long.parseUnsignedLong(capEff.trim(), 16);
            List<String> missing = new ArrayList<>();
            if ((caps & (1L << 12)) == 0) {
                missing.add("CAP_NET_ADMIN");
            }
            if ((caps & (1L << 21)) == 0) {
                missing.add("CAP_SYS_ADMIN");
            }
            if (!missing.isEmpty()) {
                throw new HostLabException(
                        "the multi-host lab runs as root but without "
                                + String.join(" and ", missing)
                                + " (a container started without --privileged?): "
                                + does);
            }
        }
        List<String> missing = new ArrayList<>();
        for (String tool : List.of("ip", "nsenter", "unshare", "mount", "bash", "timeout")) {
            if (!onPath(tool)) {
                missing.add(tool);
            }
        }
        if (!missing.isEmpty()) {
            throw new HostLabException(
                    "the multi-host lab needs "
                            + String.join(", ", missing)
                            + " on PATH (iproute2, util-linux, bash, coreutils)");
        }
    }

    /** Whether {@code tool} is an executable on PATH. */
    public static boolean onPath(String tool) {
        String path = System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        for (String dir : path.split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    private static String status(String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(field + ":")) {
                    return line.substring(field.length() + 1);
                }
            }
        } catch (IOException e) {
            // not Linux: the caller reports what it needs
        }
        return null;
    }

    private void lock() {
        try {
            Files.createDirectories(LOCKS);
            lockChannel =
                    FileChannel.open(
                            lockFile(prefix, run),
                            StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE);
            lock = lockChannel.tryLock();
            if (lock == null) {
                throw new HostLabException("run " + run + " is locked by another process");
            }
            lockChannel.write(StandardCharsets.UTF_8.encode(ProcessHandle.current().pid() + "\n"));
            OWN_RUNS.add(run);
        } catch (IOException e) {
            throw new HostLabException("cannot create the lock file under " + LOCKS, e);
        }
    }

    private static Path lockFile(String prefix, String run) {
        return LOCKS.resolve(prefix + "-" + run + ".lock");
    }

    /** Whether a living process holds the lock of {@code run}. */
    private static boolean lockHeld(String prefix, String run) {
        Path file = lockFile(prefix, run);
        if (!Files.exists(file)) {
            return false;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            FileLock l = ch.tryLock();
            if (l == null) {
                return true;
            }
            l.release();
            Files.deleteIfExists(file);
            return false;
        } catch (OverlappingFileLockException e) {
            return true; // this JVM holds it
        } catch (IOException e) {
            return false;
        }
    }

    private void build(List<String> names, long shmBytes) {
        addNamespace(network);
        ip("-n", network, "link", "add", "ctl", "type", "bridge");
        ip("-n", network, "link", "add", "dp", "type", "bridge");
        ip("-n", network, "link", "set", "ctl", "up");
        ip("-n", network, "link", "set", "dp", "up");
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            String ns = prefix + "-" + run + "-" + name;
            addNamespace(ns);
            String control = "198.18.0." + (i + 1);
            String data = "198.19.0." + (i + 1);
            attach(ns, "c" + i, "ctl", "ctl0", control);
            attach(ns, "d" + i, "dp", "dp0", data);
            hosts.put(name, anchor(name, i, ns, control, data, shmBytes));
        }
    }

    private void addNamespace(String ns) {
        ip("netns", "add", ns);
        namespaces.add(ns);
        // No IPv6 (its neighbour discovery would add frames to the counters), timestamps on so
        // that every TCP frame has the same header size (LinkCounters.FRAME_HEADER_BYTES).
        Commands.check(
                List.of(
                        "ip",
                        "netns",
                        "exec",
                        ns,
                        "sh",
                        "-c",
                        "if [ -d /proc/sys/net/ipv6 ]; then echo 1 >"
                                + " /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 >"
                                + " /proc/sys/net/ipv6/conf/default/disable_ipv6; fi && echo 1 >"
                                + " /proc/sys/net/ipv4/tcp_timestamps"));
        ip("-n", ns, "link", "set", "lo", "up");
    }

    private void attach(String ns, String port, String bridge, String ifname, String address) {
        ip("-n", network, "link", "add", port, "type", "veth", "peer", "name", ifname, "netns", ns);
        ip("-n", network, "link", "set", port, "master", bridge);
        ip("-n", network, "link", "set", port, "up");
        ip("-n", ns, "addr", "add", address + "/24", "dev", ifname);
        ip("-n", ns, "link", "set", ifname, "up");
    }

    /**
     * The process that holds the host's mount namespace: it mounts the private tmpfs, says ready
     * and waits on its stdin, so it ends by itself when this JVM ends, however that happens.
     */
    private Host anchor(
            String name, int index, String ns, String control, String data, long shmBytes) {
        String script =
                "mount -t tmpfs -o size="
                        + shmBytes
                        + ",mode=1777 "
                        + ns
                        + " /dev/shm && echo ready && exec cat > /dev/null";
        try {
            Process p =
                    new ProcessBuilder(
                                    "ip",
                                    "netns",
                                    "exec",
                                    ns,
                                    "unshare",
                                    "--mount",
                                    "--propagation",
                                    "private",
                                    "sh",
                                    "-c",
                                    script)
                            .redirectErrorStream(true)
                            .start();
            BufferedReader out =
                    new BufferedReader(
                            new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            StringBuilder said = new StringBuilder();
            String line;
            while ((line = out.readLine()) != null && !line.equals("ready")) {
                said.append(line).append('\n');
            }
            if (line == null) {
                p.destroyForcibly();
                throw new HostLabException(
                        "cannot give host "
                                + name
                                + " a private /dev/shm: "
                                + said.toString().strip());
            }
            Path proc = Path.of("/proc", Long.toString(p.pid()));
            String device = shmDeviceOf(proc.resolve("mountinfo"));
            String mnt = Files.readSymbolicLink(proc.resolve("ns/mnt")).toString();
            if (device == null || device.equals(ShmIsolation.machineShmDevice())) {
                p.destroyForcibly();
                throw new HostLabException("host " + name + " did not get a tmpfs of its own");
            }
            return new Host(this, name, index, ns, control, data, p, device, mnt);
        } catch (IOException e) {
            throw new HostLabException("cannot start the anchor of host " + name, e);
        }
    }

    /** {@code major:minor} of the filesystem mounted last on {@code /dev/shm}, or null. */
    static String shmDeviceOf(Path mountinfo) {
        String device = null;
        try {
            for (String line : Files.readAllLines(mountinfo)) {
                String[] f = line.split(" ");
                if (f.length > 4 && f[4].equals("/dev/shm")) {
                    device = f[2];
                }
            }
        } catch (IOException e) {
            return null;
        }
        return device;
    }

    private static void removeNamespace(String ns) {
        Commands.Result pids = Commands.run(List.of("ip", "netns", "pids", ns), 10);
        if (pids.ok() && !pids.out().isBlank()) {
            for (String pid : pids.out().split("\\s+")) {
                ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
        Commands.Result del = Commands.run(List.of("ip", "netns", "delete", ns), 30);
        if (!del.ok() && !del.out().contains("No such file")) {
            System.err.println("host lab: cannot delete namespace " + ns + ": " + del.out());
        }
    }

    /**
     * Cuts {@code host}'s data-plane link as a pulled cable would: its bridge port goes down, so
     * every frame to or from its {@code dp0} is dropped silently and its peers see only silence (no
     * reset, no unreachable). The control network is untouched.
     */
    public void cutDataLink(String host) {
        ip("-n", network, "link", "set", "d" + host(host).index(), "down");
    }

    /** Plugs {@code host}'s data-plane link back in ({@link #cutDataLink(String)}). */
    public void restoreDataLink(String host) {
        ip("-n", network, "link", "set", "d" + host(host).index(), "up");
    }

    /**
     * Cuts the data-plane path between hosts {@code a} and {@code b} only, both ways: each gets a
     * blackhole route to the other's data-plane address, so what either sends the other is dropped
     * (an established connection hears nothing; a new one is refused at once), while both still
     * reach every other host and the control network. No firewall and no {@code tc} action module
     * is needed; the routes go with the namespaces, or with {@link #healDataLink(String, String)}.
     */
    public void partitionDataLink(String a, String b) {
        Host ha = host(a);
        Host hb = host(b);
        ip("-n", ha.namespace(), "route", "add", "blackhole", hb.dataAddress() + "/32");
        try {
            ip("-n", hb.namespace(), "route", "add", "blackhole", ha.dataAddress() + "/32");
        } catch (HostLabException e) {
            healDataLink(a, b);
            throw e;
        }
    }

    /**
     * Removes what {@link #partitionDataLink(String, String)} added between {@code a} and {@code
     * b}; a route already gone is no error. Returns the routes it removed.
     */
    public int healDataLink(String a, String b) {
        Host ha = host(a);
        Host hb = host(b);
        int removed = 0;
        for (Host[] pair : new Host[][] {{ha, hb}, {hb, ha}}) {
            Commands.Result r =
                    Commands.run(
                            List.of(
                                    "ip",
                                    "-n",
                                    pair[0].namespace(),
                                    "route",
                                    "del",
                                    "blackhole",
                                    pair[1].dataAddress() + "/32"),
                            30);
            if (r.ok()) {
                removed++;
            }
        }
        return removed;
    }

    /** Whether {@code host} has a blackhole route to {@code to}'s data-plane address now. */
    public boolean dataPathCut(String host, String to) {
        return Commands.check(
                        List.of(
                                "ip",
                                "-n",
                                host(host).namespace(),
                                "route",
                                "show",
                                "type",
                                "blackhole"))
                .contains(host(to).dataAddress());
    }

    /**
     * Limits what {@code host} sends on its data-plane link to {@code rate} ({@code tc} rate, e.g.
     * {@code 10mbit}), so that a transfer from it lasts long enough to be cut in the middle.
     */
    public void shapeDataLink(String host, String rate) {
        tcQdisc(
                host(host).namespace(),
                "replace",
                "dp0",
                List.of("root", "tbf", "rate", rate, "burst", "32kb", "latency", "1s"));
    }

    /**
     * Gives {@code host}'s data-plane link a NIC's rate, {@code rate} ({@code tc} rate, e.g. {@code
     * 2gbit}), in both directions, as a full-duplex NIC has: a token bucket ({@code tbf}) on the
     * egress of each end of its veth pair, {@code dp0} in the host (what the host sends) and its
     * bridge port {@code d<i>} (what the bridge delivers to the host, i.e. what the host receives).
     * The bridge port's egress queue is where a switch queues frames for a slower port, so TCP sees
     * a queue and backs off, not the drops an ingress policer would cause; and no {@code ifb}
     * device is needed. The bucket holds 256 KiB (a few GSO frames) and queues up to 50 ms. The
     * qdiscs go with the namespaces.
     */
    public void shapeDataLinkBothWays(String host, String rate) {
        Host h = host(host);
        List<String> tbf =
                List.of("root", "tbf", "rate", rate, "burst", "256kb", "latency", "50ms");
        tcQdisc(h.namespace(), "replace", "dp0", tbf);
        tcQdisc(network, "replace", "d" + h.index(), tbf);
    }

    /**
     * The {@code tc} statistics of the shaping qdisc on both ends of {@code host}'s data-plane link
     * ({@link #shapeDataLinkBothWays}): {@code [sent by the host, delivered to the host]}, each as
     * {@code tc -s -j qdisc show} reports it (bytes, packets, drops, overlimits).
     */
    public List<JsonNode> dataLinkQdiscs(String host) {
        Host h = host(host);
        return List.of(
                qdisc(List.of("ip", "netns", "exec", h.namespace()), "dp0"),
                qdisc(List.of("ip", "netns", "exec", network), "d" + h.index()));
    }

    private static JsonNode qdisc(List<String> in, String dev) {
        List<String> command = new ArrayList<>(in);
        command.addAll(List.of("tc", "-s", "-j", "qdisc", "show", "dev", dev, "root"));
        JsonNode all = JSON.readTree(Commands.check(command));
        return all.isArray() && !all.isEmpty() ? all.get(0) : JSON.createObjectNode();
    }

    /** Takes {@link #shapeDataLink(String, String)}'s limit off again. */
    public void unshapeDataLink(String host) {
        tcQdisc(host(host).namespace(), "del", "dp0", List.of("root"));
    }

    /** {@code tc qdisc <action> dev <dev> <rest>} in network namespace {@code namespace}. */
    private static void tcQdisc(String namespace, String action, String dev, List<String> rest) {
        List<String> command =
                new ArrayList<>(List.of("ip", "netns", "exec", namespace, "tc", "qdisc", action));
        command.addAll(List.of("dev", dev));
        command.addAll(rest);
        Commands.check(command);
    }

    private static void ip(String... args) {
        List<String> command = new ArrayList<>();
        command.add("ip");
        command.addAll(List.of(args));
        Commands.check(command);
    }
}
