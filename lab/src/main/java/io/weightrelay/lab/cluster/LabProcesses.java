package io.weightrelay.lab.cluster;

import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The child JVMs of one lab: each service started from the checkout's jar with the JVM options its
 * image runs with, watched until healthy, its log tail shown after a failure, and every one stopped
 * by {@link #stopAll()}. Which process serves which role is {@link LabServices}'s business. Not
 * thread safe.
 */
final class LabProcesses {

    /**
     * How long each service may take to answer its health check: 3 minutes, or the system property
     * {@code relay.lab.healthy-seconds} (the Python tests give a loaded machine more).
     */
    static final Duration HEALTHY =
            Duration.ofSeconds(Long.getLong("relay.lab.healthy-seconds", 180));

    /**
     * What publisher-service and loader-service run with here, as in their images: C1 only. Their
     * hot paths are native; C2 recompiling their Java control flow for dozens of updates took a
     * quarter of the two cores during a measured update and starved the copies beside it.
     */
    static final List<String> DATA_PLANE_JVM_OPTIONS = List.of("-XX:TieredStopAtLevel=1");

    private final LabCluster.Spec spec;
    private final Path logs;
    private final List<ServiceProcess> children = new ArrayList<>();

    /** control-api restarts so far, to name each one's log. */
    private int restarts;

    LabProcesses(LabCluster.Spec spec, Path logs) {
        this.spec = spec;
        this.logs = logs;
    }

    /**
     * Starts {@code module}'s service from the checkout's jar with the JVM options its image runs
     * with ({@link #DATA_PLANE_JVM_OPTIONS} for the data-plane services); {@link #stopAll()} stops
     * it.
     */
    ServiceProcess start(String name, String module, String heap, List<String> args) {
        ServiceProcess process =
                ServiceProcess.start(
                        name,
                        ServiceProcess.findJar(spec.site().root(), module),
                        heap,
                        module.equals("control-api") ? List.of() : DATA_PLANE_JVM_OPTIONS,
                        args,
                        logs);
        children.add(process);
        return process;
    }

    /**
     * Starts control-api again on {@code dead}'s port with {@code args}; its log is {@code
     * control-api-restarted-<n>.log}.
     */
    ServiceProcess restartControlApi(ServiceProcess dead, List<String> args) {
        ServiceProcess fresh =
                ServiceProcess.restart(
                        dead,
                        "control-api-restarted-" + restarts++,
                        ServiceProcess.findJar(spec.site().root(), "control-api"),
                        "512m",
                        List.of(),
                        args,
                        logs);
        children.add(fresh);
        return fresh;
    }

    /** Kills {@code process} at once (SIGKILL) and forgets it: its log is shown no more. */
    void killAndForget(ServiceProcess process) {
        process.kill();
        children.remove(process);
    }

    /** Waits until every process started so far is healthy ({@link #awaitHealthy}). */
    void awaitAllHealthy() throws InterruptedException {
        awaitHealthy(children);
    }

    /**
     * Waits until {@code services} are healthy, all watched at once: one that exits early, or the
     * lab's Redis not answering, fails the wait within seconds and names them ({@link
     * ServiceProcess#awaitHealthy(java.util.Collection, Duration, ServiceProcess.Dependencies)}).
     */
    void awaitHealthy(Collection<ServiceProcess> services) throws InterruptedException {
        ServiceProcess.awaitHealthy(services, HEALTHY, () -> redisBroken(spec));
    }

    /**
     * What must hold before a lab of {@code spec} starts a process: its Redis answers (one that
     * does not would show only as services that never turn healthy, after the whole health wait;
     * said now, in a second), and what earlier labs ended by SIGKILL or the OOM killer left is
     * gone, so that this one is not short of shared memory (every service's data plane would
     * reclaim too, but later and unseen) and their Redis keys are deleted.
     */
    static void beforeStart(LabCluster.Spec spec) {
        redisBroken(spec)
                .ifPresent(
                        broken -> {
                            throw new IllegalStateException(
                                    "cannot start the lab's control-api, publishers and loaders: "
                                            + broken);
                        });
        LabStore.reclaimOrphanedSegmentFiles("left by killed processes");
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        for (String run : KilledLabs.sweep(tmp, spec.redisUri())) {
            System.err.println("lab: deleted the Redis keys of lab run " + run + " (killed)");
        }
    }

    /** Empty while the lab's Redis answers PING, else a sentence naming it. */
    static Optional<String> redisBroken(LabCluster.Spec spec) {
        LabCluster.Site site = spec.site();
        if (LabRedis.answersPing(site.redisHost(), site.redisPort())) {
            return Optional.empty();
        }
        return Optional.of(
                "the lab's Redis at "
                        + spec.redisUri()
                        + " does not answer (./relay starts one of its own when it has to; see "
                        + RunRedis.ENV
                        + ")");
    }

    /**
     * Every process this lab runs, by name ({@code control-api}, {@code publisher-<node>}, ...).
     */
    Map<String, String> urls() {
        Map<String, String> out = new LinkedHashMap<>();
        children.forEach(c -> out.put(c.name(), c.baseUrl()));
        return out;
    }

    /** Prints every process's log tail to stderr (after a failure). */
    void dumpLogs() {
        for (ServiceProcess c : children) {
            System.err.println("---- " + c.name() + " ----\n" + c.tail());
        }
    }

    /** Stops every process started so far. */
    void stopAll() {
        for (ServiceProcess c : children) {
            c.close();
        }
        children.clear();
    }
}
