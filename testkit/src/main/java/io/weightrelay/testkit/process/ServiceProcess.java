package io.weightrelay.testkit.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

/**
 * One service started as a child JVM from its executable ({@code -exec}) jar on a free loopback
 * port, its output in a log file ({@link ChildProcess}). Its {@code java.io.tmpdir} is a directory
 * of its own beside the log ({@code <name>.tmp}), removed once it stopped: embedded Tomcat leaves
 * its base and document-root directories behind in the temporary directory, two per start, so a lab
 * of dozens of starts otherwise left them by the hundred in {@code /tmp}. Not thread safe: one
 * owner starts, watches and stops it.
 */
public final class ServiceProcess extends ChildProcess {

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    /** The first port of the range {@link #freePort()} picks from when the kernel leaves room. */
    private static final int FIXED_PORTS_FROM = 20_000;

    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    /** What a service's temporary directory is named after: {@code <name>.tmp}, beside its log. */
    private static final String TMP_SUFFIX = ".tmp";

    private final int port;
    private final Path tmp;

    private ServiceProcess(String name, Process process, Path log, int port, Path tmp) {
        super(name, process, log);
        this.port = port;
        this.tmp = tmp;
    }

    /** Stops the service as {@link ChildProcess#close()} does, then removes its tmpdir. */
    @Override
    public void close() {
        super.close();
        if (!isAlive()) {
            deleteTree(tmp);
        }
    }

    /**
     * The temporary directory of service {@code name} whose log is in {@code logs}, made now: what
     * its JVM gets as {@code -Djava.io.tmpdir}, removed with {@link #deleteTree} once it stopped.
     */
    public static Path tmpDir(Path logs, String name) throws IOException {
        return Files.createDirectories(logs.resolve(name + TMP_SUFFIX));
    }

    /**
     * Removes every service's temporary directory in {@code logs}: a launcher's close, after its
     * services stopped (a killed service's outlives it; the others went with their {@link #close}).
     */
    public static void deleteTmpDirs(Path logs) {
        try (DirectoryStream<Path> tmps = Files.newDirectoryStream(logs, "*" + TMP_SUFFIX)) {
            tmps.forEach(ServiceProcess::deleteTree);
        } catch (IOException e) {
            System.err.println("could not remove the services' temporary directories: " + e);
        }
    }

    /**
     * Removes {@code root} and everything under it, never following a link; logs what it cannot.
     */
    static void deleteTree(Path root) {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> tree = Files.walk(root)) {
            for (Path p : tree.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | UncheckedIOException e) {
            System.err.println("could not remove " + root + ": " + e);
        }
    }

    /**
     * Starts {@code jar} with {@code -Xmx<heap>}, the given JVM options and Spring arguments
     * ({@code --key=value}) on a free loopback port, from its fast-start layout ({@link FastStart}:
     * made at the first start of a built jar). Returns at once: call {@link
     * #awaitHealthy(Duration)} before using it, so that several services start in parallel.
     */
    public static ServiceProcess start(
            String name,
            Path jar,
            String heap,
            List<String> jvmOptions,
            List<String> args,
            Path logs) {
        return launch(name, FastStart.jarArgs(jar), heap, jvmOptions, args, logs, jar, freePort());
    }

    /**
     * Starts {@code jar} again as {@code name} on the port {@code previous} listened on, with the
     * same kind of arguments as {@link #start(String, Path, String, List, List, Path)}: a restart
     * its clients, which were given that URL, find without being told. {@code previous} must have
     * stopped (a killed process's listening socket is gone at once; Tomcat binds with {@code
     * SO_REUSEADDR}, so its connections in {@code TIME_WAIT} do not keep the port).
     */
    public static ServiceProcess restart(
            ServiceProcess previous,
            String name,
            Path jar,
            String heap,
            List<String> jvmOptions,
            List<String> args,
            Path logs) {
        if (previous.isAlive()) {
            throw new IllegalStateException(
                    previous.name() + " still runs; its port " + previous.port + " is taken");
        }
        return launch(
                name, FastStart.jarArgs(jar), heap, jvmOptions, args, logs, jar, previous.port);
    }

    /**
     * As {@link #start(String, Path, String, List, List, Path)}, from {@code mainClass} on {@code
     * classpath} instead of a jar: a module's tests run their own service this way, before its jar
     * is packaged.
     */
    public static ServiceProcess startMain(
            String name,
            String classpath,
            String mainClass,
            String heap,
            List<String> jvmOptions,
            List<String> args,
            Path logs) {
        return launch(
                name,
                List.of("-cp", classpath, mainClass),
                heap,
                jvmOptions,
                args,
                logs,
                Path.of(mainClass),
                freePort());
    }

    private static ServiceProcess launch(
            String name,
            List<String> what,
            String heap,
            List<String> jvmOptions,
            List<String> args,
            Path logs,
            Path from,
            int port) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx" + heap);
        command.addAll(
                name.startsWith("control-api")
                        ? List.of("-XX:+UseParallelGC", "-XX:ParallelGCThreads=2")
                        : List.of("-XX:+UseSerialGC"));
        command.addAll(defaultJvmOptions());
        command.addAll(jvmOptions);
        Path tmp = logs.resolve(name + TMP_SUFFIX);
        command.add("-Djava.io.tmpdir=" + tmp);
        command.addAll(what);
        command.add("--server.port=" + port);
        command.add("--server.address=127.0.0.1");
        // Stops itself if this JVM dies without stopping it (a SIGKILLed lab or test run).
        command.add(parentPidArg());
        command.addAll(args);
        Path log = logs.resolve(name + ".log");
        try {
            Files.createDirectories(tmp);
            Process p =
                    new ProcessBuilder(command)
                            .redirectErrorStream(true)
                            .redirectOutput(log.toFile())
                            .start();
            return new ServiceProcess(name, p, log, port, tmp);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + " from " + from, e);
        }
    }

    /**
     * The system property whose value (JVM options separated by spaces) every service this process
     * starts gets before its own options. The test suites set {@code -XX:TieredStopAtLevel=1}: a
     * service started by a test spends about half the CPU to start with C1 only, and on two cores
     * the labs' starts are most of a test's time; benchmarks leave it unset and measure full JIT.
     */
    public static final String JVM_OPTIONS_PROPERTY = "relay.service.jvm-options";

    private static List<String> defaultJvmOptions() {
        String value = System.getProperty(JVM_OPTIONS_PROPERTY, "").strip();
        return value.isEmpty() ? List.of() : List.of(value.split("\\s+"));
    }

    /**
     * The Spring argument that ties a service's life to this JVM's ({@code relay.parent-pid}, see
     * {@code io.weightrelay.service.lifecycle.ParentWatch}).
     */
    public static String parentPidArg() {
        return "--relay.parent-pid=" + ProcessHandle.current().pid();
    }

    /** {@link #start(String, Path, String, List, List, Path)} with no extra JVM options. */
    public static ServiceProcess start(
            String name, Path jar, String heap, List<String> args, Path logs) {
        return start(name, jar, heap, List.of(), args, logs);
    }

    public int port() {
        return port;
    }

    public String baseUrl() {
        return "http://127.0.0.1:" + port;
    }

    /** Waits until {@code /actuator/health} answers 200; fails with the log's tail otherwise. */
    public void awaitHealthy(Duration timeout) throws InterruptedException {
        awaitHealthy(List.of(this), timeout, Optional::empty);
    }

    /**
     * What a group of services needs from outside to become healthy (their Redis): empty while it
     * answers, else a sentence naming what does not answer.
     */
    @FunctionalInterface
    public interface Dependencies {
        Optional<String> broken();
    }

    /**
     * How often {@link #awaitHealthy(Collection, Duration, Dependencies)} asks its dependencies.
     */
    private static final Duration DEPENDENCY_CHECK = Duration.ofSeconds(1);

    /**
     * How long a service may keep saying it cannot reach a dependency that answers whoever waits
     * for it. On a machine loaded far past its cores a service's Redis handshake times out a few
     * times in a row while Redis is up (the fault suite met it at a load average of 28 on 2 cores),
     * and the service says so, then that it answers again; a misconfigured address never answers
     * and is still named within seconds. A dependency the waiter cannot reach either fails the wait
     * at once.
     */
    public static final Duration UNREACHABLE_GRACE = Duration.ofSeconds(6);

    /**
     * Waits until every one of {@code services} answers {@code /actuator/health} with 200, watching
     * all of them each round rather than one after another: a service that exits early fails the
     * wait at once with its name and log's tail, whichever of them it is, and so does {@code
     * dependencies} (asked about once a second) when something every service needs stopped
     * answering, naming the services not healthy yet, and so does a service whose log says it
     * cannot reach a dependency ({@link #unreachableDependency()}), naming it and what it said: at
     * once when {@code dependencies} is broken too, else once it has said so for {@link
     * #UNREACHABLE_GRACE}. Only a service that is alive, its dependencies answering, and still not
     * healthy waits out {@code timeout}.
     */
    public static void awaitHealthy(
            Collection<ServiceProcess> services, Duration timeout, Dependencies dependencies)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        long nextCheck = System.nanoTime();
        List<ServiceProcess> waiting = new ArrayList<>(services);
        Map<ServiceProcess, Long> saidUnreachableSince = new HashMap<>();
        while (!waiting.isEmpty()) {
            for (ServiceProcess s : waiting) {
                if (!s.isAlive()) {
                    throw new IllegalStateException(
                            s.name() + " exited early; its log:\n" + s.tail());
                }
            }
            if (System.nanoTime() - nextCheck >= 0) {
                Optional<String> broken = dependencies.broken();
                for (ServiceProcess s : waiting) {
                    Optional<String> unreachable = s.unreachableDependency();
                    if (unreachable.isEmpty()) {
                        saidUnreachableSince.remove(s);
                        continue;
                    }
                    long since = saidUnreachableSince.computeIfAbsent(s, k -> System.nanoTime());
                    if (broken.isPresent()
                            || System.nanoTime() - since >= UNREACHABLE_GRACE.toNanos()) {
                        throw new IllegalStateException(
                                s.name()
                                        + " cannot become healthy: it says "
                                        + unreachable.get()
                                        + "; its log:\n"
                                        + s.tail());
                    }
                }
                if (broken.isPresent()) {
                    throw new IllegalStateException(
                            names(waiting)
                                    + " cannot become healthy: "
                                    + broken.get()
                                    + "; the log of "
                                    + waiting.get(0).name()
                                    + ":\n"
                                    + waiting.get(0).tail());
                }
                nextCheck = System.nanoTime() + DEPENDENCY_CHECK.toNanos();
            }
            waiting.removeIf(ServiceProcess::answersHealth);
            if (waiting.isEmpty()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                ServiceProcess first = waiting.get(0);
                throw new IllegalStateException(
                        names(waiting)
                                + " not healthy within "
                                + timeout
                                + "; the log of "
                                + first.name()
                                + ":\n"
                                + first.tail());
            }
            Thread.sleep(250);
        }
    }

    private static String names(List<ServiceProcess> services) {
        return String.join(", ", services.stream().map(ServiceProcess::name).toList());
    }

    /** Whether {@code /actuator/health} answers 200 now. */
    private boolean answersHealth() {
        HttpRequest health =
                HttpRequest.newBuilder(URI.create(baseUrl() + "/actuator/health"))
                        .timeout(Duration.ofSeconds(2))
                        .build();
        try {
            return HTTP.send(health, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false; // not listening yet
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The {@code -exec} jar of {@code module} in the checkout at {@code root}. */
    public static Path findJar(Path root, String module) {
        Path target = root.resolve(module).resolve("target");
        try (DirectoryStream<Path> jars =
                Files.newDirectoryStream(target, module + "-*-exec.jar")) {
            for (Path jar : jars) {
                return jar;
            }
        } catch (IOException e) {
            // fall through to the message below
        }
        throw new IllegalStateException(
                "no "
                        + module
                        + "-*-exec.jar under "
                        + target
                        + "; build it with mvn -DskipTests install");
    }

    /** The checkout root: {@code -Drelay.home} (set by ./relay), else the working directory. */
    public static Path home() {
        return Path.of(System.getProperty("relay.home", ".")).toAbsolutePath().normalize();
    }

    /**
     * A port free on loopback now, for a child to bind a few seconds later. It is taken below the
     * kernel's ephemeral range ({@code /proc/sys/net/ipv4/ip_local_port_range}): a port the kernel
     * hands out for {@code bind(0)} (every data-plane engine binds so) or an outgoing connection in
     * the meantime can then never be the one chosen, which is how a lab once lost a loader to "Port
     * ... was already in use" (its port had gone to a publisher's engine while the loader's JVM
     * started). Ports handed out by this JVM are not handed out again. Falls back to {@code
     * bind(0)} where there is no room below the ephemeral range.
     */
    public static int freePort() {
        int ephemeralLow = ephemeralRangeLow();
        if (ephemeralLow - FIXED_PORTS_FROM >= 1024) {
            for (int attempt = 0; attempt < 200; attempt++) {
                int port = ThreadLocalRandom.current().nextInt(FIXED_PORTS_FROM, ephemeralLow);
                if (HANDED_OUT.contains(port)) {
                    continue;
                }
                try (ServerSocket s = new ServerSocket()) {
                    s.setReuseAddress(false);
                    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
                } catch (IOException busy) {
                    continue;
                }
                if (HANDED_OUT.add(port)) {
                    return port;
                }
            }
        }
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static int ephemeralRangeLow() {
        try {
            // readAllLines, not readString: procfs files report size 0 and readString stops short.
            String range =
                    Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).get(0);
            return Integer.parseInt(range.trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException unknown) {
            return 0;
        }
    }
}
