package io.weightrelay.lab.bench;

import io.weightrelay.lab.cluster.LabStore;
import io.weightrelay.lab.cluster.RunRedis;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.springframework.util.FileSystemUtils;

/**
 * One run of a bench that starts its services itself ({@code bench publish}, {@code bench
 * control-plane}): its name, under which its services keep their Redis keys, their logs, and the
 * services it started. Closing it stops them and removes what the run left unless {@link
 * BenchServices#keepRedis()} or {@link BenchServices#keepLogs()} keep it: one place for both
 * benches, so each starts control-api on the run's own prefixes and removes all it wrote.
 */
final class BenchRun implements AutoCloseable {

    /** Eight hex digits, in the run's keys, segments and temporary files. */
    final String id = UUID.randomUUID().toString().substring(0, 8);

    /** The prefix of every Redis key of the run; the data plane's are under {@code dp:} in it. */
    final String keyPrefix = "wr:bench:" + id + ":";

    final String dataplanePrefix = keyPrefix + "dp:";

    /** The Redis the run's services use: the lab's ({@link RunRedis#configured()}). */
    private final RunRedis.Address redis = RunRedis.configured();

    final String redisUri = "redis://" + redis.hostPort();

    final Path logs = Files.createTempDirectory("wr-bench-" + id);

    private final String bench;
    private final BenchServices services;
    private final List<ServiceProcess> started = new ArrayList<>();

    /** A run of {@code bench} (its name on stderr) with {@code services}' flags. */
    BenchRun(String bench, BenchServices services) throws IOException {
        this.bench = bench;
        this.services = services;
    }

    /**
     * Starts control-api (the bench's jar) on the run's Redis and prefixes, without scheduled
     * collection (a bench collects when it chooses), with {@code jvmArgs} then {@code
     * --control-jvm-arg}s, and {@code args} then {@code --control-arg}s.
     */
    ServiceProcess startControlApi(String heap, List<String> jvmArgs, String... args) {
        List<String> jvm = new ArrayList<>(jvmArgs);
        jvm.addAll(services.controlJvmArgs());
        List<String> spring =
                new ArrayList<>(
                        List.of(
                                "--spring.data.redis.host=" + redis.host(),
                                "--spring.data.redis.port=" + redis.port(),
                                "--relay.redis.key-prefix=" + keyPrefix,
                                "--relay.dataplane.key-prefix=" + dataplanePrefix,
                                "--relay.generations.scheduled-gc=false"));
        spring.addAll(List.of(args));
        spring.addAll(services.controlArgs());
        return start("control-api", services.controlApiJar(), heap, jvm, spring);
    }

    /** Starts a service of the run, logging into the run's logs; closing the run stops it. */
    ServiceProcess start(String name, Path jar, String heap, List<String> jvm, List<String> args) {
        ServiceProcess process = ServiceProcess.start(name, jar, heap, jvm, args, logs);
        started.add(process);
        return process;
    }

    List<ServiceProcess> services() {
        return List.copyOf(started);
    }

    /** Every service's last log lines on stderr: what a failed run shows. */
    void showTails() {
        for (ServiceProcess s : started) {
            System.err.println("---- " + s.name() + " " + s.baseUrl() + " ----\n" + s.tail());
        }
    }

    /** Stops the services, then removes the run's keys and logs unless kept. */
    @Override
    public void close() {
        for (ServiceProcess s : started) {
            s.close();
        }
        if (!services.keepRedis()) {
            // The services have stopped: nothing writes under the run's prefix any more.
            LabStore.deleteKeys(redisUri, keyPrefix);
        }
        if (services.keepLogs()) {
            System.err.println("bench " + bench + ": logs in " + logs);
        } else {
            FileSystemUtils.deleteRecursively(logs.toFile()); // logs in /tmp
        }
    }
}
