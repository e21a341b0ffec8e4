package io.weightrelay.lab.bench;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.RunRedis;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;
import java.util.List;

/**
 * How a bench that starts its services itself ({@code bench publish}, {@code bench control-plane})
 * starts control-api, and what the run leaves behind.
 *
 * @param root the checkout whose service jars run
 * @param controlJar control-api's jar as given, or null: {@code root}'s
 * @param controlJvmArgs JVM flags for control-api
 * @param controlArgs Spring flags for control-api
 * @param keepRedis leave the run's Redis keys behind
 * @param keepLogs keep the services' logs
 */
public record BenchServices(
        Path root,
        Path controlJar,
        List<String> controlJvmArgs,
        List<String> controlArgs,
        boolean keepRedis,
        boolean keepLogs) {

    public BenchServices {
        controlJvmArgs = List.copyOf(controlJvmArgs);
        controlArgs = List.copyOf(controlArgs);
    }

    /**
     * Where a bench's lab runs: the lab's Redis ({@link RunRedis#configured()}, the one {@code
     * ./relay} chose, so asked when the bench runs, not when its flags are read) and {@code root}.
     */
    static LabCluster.Site site(Path root) {
        RunRedis.Address redis = RunRedis.configured();
        return new LabCluster.Site(redis.host(), redis.port(), root);
    }

    /** control-api's jar: the one given, else the one built under {@link #root()}. */
    Path controlApiJar() {
        return jar(controlJar, "control-api");
    }

    /** {@code given}, else {@code module}'s jar built under {@link #root()}. */
    Path jar(Path given, String module) {
        return given != null ? given : ServiceProcess.findJar(root, module);
    }
}
