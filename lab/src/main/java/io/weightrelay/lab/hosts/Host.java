package io.weightrelay.lab.hosts;

import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One host of a {@link HostLab}: a network namespace with an address on the control network and one
 * on the data-plane network, and a mount namespace with a private tmpfs on {@code /dev/shm}, kept
 * alive by an anchor process. Every process of the host enters both namespaces of the anchor, so it
 * sees only this host's shared memory. Thread safe.
 *
 * @param lab the lab that made it and tracks its processes
 * @param name the host's name in the lab ({@code control}, {@code trainer-0000}, ...)
 * @param index its position in the lab: its links are {@code c<index>} and {@code d<index>}
 * @param namespace the network namespace ({@code ip netns}) of this host
 * @param controlAddress this host's address on the control network (REST, Redis)
 * @param dataAddress this host's address on the data-plane network (the Transfer Engine's tcp
 *     transport)
 * @param anchor the process that keeps both namespaces alive
 * @param shmDevice {@code major:minor} of this host's private {@code /dev/shm} tmpfs
 * @param mountNamespace the mount namespace every process of this host runs in ({@code
 *     mnt:[inode]})
 */
public record Host(
        HostLab lab,
        String name,
        int index,
        String namespace,
        String controlAddress,
        String dataAddress,
        Process anchor,
        String shmDevice,
        String mountNamespace) {

    long anchorPid() {
        return anchor.pid();
    }

    /** {@code command} wrapped so that it runs inside this host's network and mount namespaces. */
    public List<String> inside(List<String> command) {
        List<String> out = new ArrayList<>();
        out.add("nsenter");
        out.add("--target");
        out.add(Long.toString(anchor.pid()));
        out.add("--mount");
        out.add("--net");
        out.add("--");
        out.addAll(command);
        return out;
    }

    /**
     * Starts {@code command} inside this host, its output in {@code logs/<name>.log}. The lab stops
     * it when it closes.
     */
    public HostProcess start(String processName, List<String> command, Path logs) {
        return lab.track(HostProcess.start(this, processName, inside(command), logs, false));
    }

    /**
     * Starts {@code command} inside this host with its stdout and stdin as pipes (an agent the lab
     * talks to line by line) and its stderr in {@code logs/<name>.log}.
     */
    public HostProcess startPiped(String processName, List<String> command, Path logs) {
        return lab.track(HostProcess.start(this, processName, inside(command), logs, true));
    }

    /**
     * Starts {@code main} from the lab's own class path in a JVM of {@code heap} inside this host,
     * with {@code args}, as an agent ({@link #startPiped}).
     */
    public HostProcess startJava(
            String processName, String heap, Class<?> main, List<String> args, Path logs) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of("-Xmx" + heap, "-XX:+UseSerialGC", "-cp"));
        command.add(HostLab.absoluteClassPath());
        command.add(main.getName());
        command.addAll(args);
        return startPiped(processName, command, logs);
    }

    /** Runs a short command inside this host and returns its exit code and output. */
    Commands.Result run(List<String> command, int seconds) {
        return Commands.run(inside(command), seconds);
    }

    /**
     * Waits until {@code GET http://address:port/path} answers 200, asked from inside this host
     * (the machine's own namespace cannot reach the lab's networks).
     */
    public void awaitHttp(String address, int port, String path, Duration timeout, HostProcess of)
            throws InterruptedException {
        String request =
                "exec 3<>/dev/tcp/%s/%d && printf 'GET %s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' >&3 && head -c 12 <&3"
                        .formatted(address, port, path, address);
        awaitAnswer(request, "HTTP/1.1 200", timeout, of);
    }

    /**
     * Starts a throwaway Redis (no persistence) on this host's control address and waits until it
     * answers; returns its URI.
     */
    public String startRedis(int port, Path logs) throws InterruptedException {
        HostProcess redis =
                start(
                        "redis",
                        List.of(
                                "redis-server",
                                "--bind",
                                controlAddress,
                                "--port",
                                Integer.toString(port),
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--protected-mode",
                                "no"),
                        logs);
        awaitRedis(controlAddress, port, Duration.ofSeconds(30), redis);
        return "redis://" + controlAddress + ":" + port;
    }

    /** Waits until a Redis on {@code address:port} answers PING, asked from inside this host. */
    public void awaitRedis(String address, int port, Duration timeout, HostProcess of)
            throws InterruptedException {
        String request =
                "exec 3<>/dev/tcp/%s/%d && printf 'PING\\r\\n' >&3 && head -c 5 <&3"
                        .formatted(address, port);
        awaitAnswer(request, "+PONG", timeout, of);
    }

    /**
     * Waits until something accepts tcp connections on {@code address:port}, asked from inside this
     * host (a listener that speaks no protocol the lab knows, such as {@code mooncake_master}'s rpc
     * port).
     */
    public void awaitListening(String address, int port, Duration timeout, HostProcess of)
            throws InterruptedException {
        String request = "exec 3<>/dev/tcp/%s/%d && echo open".formatted(address, port);
        awaitAnswer(request, "open", timeout, of);
    }

    private void awaitAnswer(String script, String expected, Duration timeout, HostProcess of)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "";
        long saidUnreachableSince = 0;
        while (System.nanoTime() < deadline) {
            if (of != null && !of.isAlive()) {
                throw new HostLabException(of.name() + " exited early; its log:\n" + of.tail());
            }
            if (of != null) {
                // A service that keeps saying it cannot reach a dependency (its Redis on another
                // host) is named within seconds, not after the whole wait; a few seconds of it are
                // a loaded machine's handshakes timing out (ServiceProcess.UNREACHABLE_GRACE).
                java.util.Optional<String> unreachable = of.unreachableDependency();
                if (unreachable.isEmpty()) {
                    saidUnreachableSince = 0;
                } else if (saidUnreachableSince == 0) {
                    saidUnreachableSince = System.nanoTime();
                }
                if (unreachable.isPresent()
                        && System.nanoTime() - saidUnreachableSince
                                >= ServiceProcess.UNREACHABLE_GRACE.toNanos()) {
                    throw new HostLabException(
                            of.name()
                                    + " cannot become healthy: it says "
                                    + unreachable.get()
                                    + "; its log:\n"
                                    + of.tail());
                }
            }
            Commands.Result r = run(List.of("timeout", "3", "bash", "-c", script), 10);
            if (r.ok() && r.out().startsWith(expected)) {
                return;
            }
            last = r.out();
            Thread.sleep(300);
        }
        throw new HostLabException(
                (of == null ? "service" : of.name())
                        + " did not answer within "
                        + timeout
                        + " ("
                        + last
                        + ")"
                        + (of == null ? "" : "; its log:\n" + of.tail()));
    }

    @Override
    public String toString() {
        return name + "[" + namespace + ", " + controlAddress + ", " + dataAddress + "]";
    }
}
