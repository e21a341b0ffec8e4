package io.weightrelay.lab.cluster;

import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.LinkCounters;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * What a demo and an update bench do with a lab, whether it runs on this machine ({@link
 * LabCluster}: every service a JVM on loopback) or on several hosts of it ({@link
 * MultiHostCluster}: network namespaces, every byte between services on a real interface). One
 * interface, so that one demo and one bench tell the same story on either and only the checks that
 * need hosts (interface traffic, {@code /proc} isolation) depend on {@link #hosts()}.
 */
public interface Cluster extends StartedOrClosed.Lab {

    /** A committed generation, how long its publish took and, on hosts, what crossed them. */
    record Published(long generation, double seconds, Optional<LinkCounters> traffic) {}

    /** The lab's model, shape and modes. */
    LabCluster.Spec spec();

    SourceManifest manifest();

    TargetPlacement placement();

    /** Where every process of the lab writes its log. */
    Path logs();

    /** The hosts the lab runs on; empty for a lab on this machine alone. */
    Optional<HostLab> hosts();

    /** The trainer publishes and commits the generation of {@code step}. */
    Published publishGeneration(long step) throws Exception;

    /** Updates every engine to the active generation, all at once. */
    LabUpdate updateAll() throws Exception;

    /** Updates the given instances together (restarted ones, say), the others left alone. */
    LabUpdate updateInstances(List<String> instances) throws Exception;

    /**
     * Every byte the engines of {@code update} hold, checked against {@code generation}'s contents;
     * the bytes checked. On hosts each engine's agent checked them as its update ended (before any
     * other update could change them), so this requires that every one of them did.
     */
    long verify(LabUpdate update, long generation);

    /**
     * Kills the loaders of the instances at {@code indexes} of the placement as a crash would,
     * starts fresh ones and registers each engine again in a group of its own, so that each loads
     * the active generation alone from the store; returns the instances' ids.
     */
    List<String> restartInstances(List<Integer> indexes) throws Exception;

    /** Removes retired generations nobody holds, as a deployment's scheduled GC would. */
    void collectGarbage();

    /** Registers every engine again, its direct workers taking new generations {@code how}. */
    void directInstall(DirectInstall how) throws Exception;

    /**
     * Whether updates serve through the fetch from now on: each engine starts its update to install
     * on request and asks to install once its group fetched.
     */
    void installOnRequest(boolean on);

    /** Every token and secret the lab configured: none may appear in a log. */
    List<String> configuredSecrets();
}
