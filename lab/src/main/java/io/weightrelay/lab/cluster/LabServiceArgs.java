package io.weightrelay.lab.cluster;

import io.weightrelay.reshard.topology.Topology;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What each service of one lab run is told on its command line: its Redis and the run's key
 * prefixes, its node, segment and staging, the data-plane keys its duty needs and the control-api
 * URLs it calls. Secrets go in files only this user can read ({@link LabSecrets#springArg}), never
 * on a command line. The multi-host lab ({@link MultiHostCluster}) tells its services the same,
 * with its own Redis and each host's addresses added.
 */
final class LabServiceArgs {
    private final LabCluster.Spec spec;
    private final String run;
    private final LabSecrets secrets;
    private final LabOptions options;
    private final List<LabCatalog.LoaderSlot> slots;

    LabServiceArgs(
            LabCluster.Spec spec,
            String run,
            LabSecrets secrets,
            LabOptions options,
            List<LabCatalog.LoaderSlot> slots) {
        this.spec = spec;
        this.run = run;
        this.secrets = secrets;
        this.options = options;
        this.slots = slots;
    }

    /** The run's id: in every key prefix, segment and shared-memory file name of the run. */
    String run() {
        return run;
    }

    /** control-api's Redis key prefix in this run; every key of the run is under it. */
    String controlPrefix() {
        return "wr:lab:" + run + ":";
    }

    /** The data-plane key prefix of this run's store (segments and object directory). */
    String dataplanePrefix() {
        return "wr:lab:" + run + ":dp:";
    }

    /** The store segment of trainer node {@code node}'s publisher (or storage unit). */
    String segmentName(String node) {
        return "lab-" + run + "-" + node;
    }

    /**
     * The argument that hands control-api its credentials: trainer and operator tokens, each
     * instance's loader token bound to that instance, each publisher's owner token bound to its
     * segment, and the owner credential it presents to the publishers. Writes their file.
     */
    String controlApiSecretsArg() {
        List<String> segments = new ArrayList<>();
        for (int i = 0; i < spec.trainerNodes(); i++) {
            segments.add(segmentName(Topology.trainerNodeName(i)));
        }
        return secrets.springArg(
                "control-api",
                secrets.controlApi(
                        slots.stream().map(LabCatalog.LoaderSlot::id).toList(), segments));
    }

    /**
     * control-api instance {@code index}, with {@code secretsArg} from {@link
     * #controlApiSecretsArg()}.
     */
    List<String> controlApi(int index, String secretsArg) {
        List<Duration> skews = options.controlApiSkews();
        return List.of(
                "--spring.data.redis.host=" + spec.site().redisHost(),
                "--spring.data.redis.port=" + spec.site().redisPort(),
                "--relay.redis.key-prefix=" + controlPrefix(),
                "--relay.dataplane.key-prefix=" + dataplanePrefix(),
                "--relay.dataplane.secret-file="
                        + secrets.dataplaneKeysFile(LabSecrets.DataplaneDuty.CONTROL_API),
                "--relay.generations.scheduled-gc=false",
                "--relay.registry.loader-ttl=" + LoaderTimings.LOADER_TTL.toSeconds() + "s",
                "--relay.updates.verify-checksums=" + options.checksums(),
                "--relay.checkpoints.root=" + LabCluster.checkpointRoot(),
                "--relay.clock.skew=" + (index < skews.size() ? skews.get(index) : Duration.ZERO),
                secretsArg);
    }

    /**
     * Trainer node {@code node}'s storage unit: the node's segment of {@code segmentBytes} (named
     * as a trainer-side publisher's would be, so owner tokens stay the same), serving no trainer.
     */
    List<String> storageUnit(String node, long segmentBytes, String controlUrls) {
        String segmentName = segmentName(node);
        return List.of(
                "--relay.segment.node=" + node,
                "--relay.segment.name=" + segmentName,
                "--relay.segment.size=" + segmentBytes + "B",
                "--relay.segment.role=storage-unit",
                "--relay.dataplane.redis-uri=" + spec.redisUri(),
                "--relay.dataplane.key-prefix=" + dataplanePrefix(),
                "--relay.dataplane.secret-file="
                        + secrets.dataplaneKeysFile(LabSecrets.DataplaneDuty.STORE_OWNER),
                "--relay.staging.mode=segment",
                "--relay.staging.capacity=" + LabCatalog.MAX_BATCH + "B",
                "--relay.staging.max-batch-bytes=" + LabCatalog.MAX_BATCH + "B",
                "--relay.publish.control-api-url=" + controlUrls,
                secrets.springArg("unit-" + node, secrets.publisher(segmentName)));
    }

    /**
     * Trainer node {@code node}'s publisher: the owner of a segment of {@code segmentBytes} staging
     * in it, or in a lab of storage units a client-only one (no store memory, staging in a file of
     * its own) that stores into its node's unit.
     */
    List<String> publisher(String node, long segmentBytes, long stagingBytes, String controlUrls) {
        String segmentName = segmentName(node);
        boolean client = options.storageUnits();
        List<String> placementArgs =
                client
                        ? List.of(
                                // client-only: no store memory, staging in a file of its own
                                "--relay.segment.name=" + segmentName + "-client",
                                "--relay.segment.size=0B",
                                "--relay.segment.role=client",
                                "--relay.staging.mode=file",
                                "--relay.staging.path=/dev/shm/wr-lab-staging-" + run + "-" + node)
                        : List.of(
                                "--relay.segment.name=" + segmentName,
                                "--relay.segment.size=" + segmentBytes + "B",
                                "--relay.staging.mode=segment");
        List<String> args = new ArrayList<>();
        args.add("--relay.segment.node=" + node);
        args.addAll(placementArgs);
        args.addAll(
                List.of(
                        "--relay.dataplane.redis-uri=" + spec.redisUri(),
                        "--relay.dataplane.key-prefix=" + dataplanePrefix(),
                        "--relay.dataplane.secret-file="
                                + secrets.dataplaneKeysFile(
                                        client
                                                ? LabSecrets.DataplaneDuty.STORER
                                                : LabSecrets.DataplaneDuty.STORE_OWNER),
                        "--relay.staging.capacity=" + stagingBytes + "B",
                        "--relay.staging.max-batch-bytes=" + LabCatalog.MAX_BATCH + "B",
                        "--relay.publish.control-api-url=" + controlUrls,
                        secrets.springArg("publisher-" + node, secrets.publisher(segmentName))));
        return args;
    }

    /**
     * What every loader is told, on one machine or on hosts: its control-api URLs, the run's data
     * plane and checksum setting, its heartbeat ({@link LoaderTimings#LOADER_HEARTBEAT}, which
     * control-api's {@link LoaderTimings#LOADER_TTL} counts on), and the loader token of rollout
     * instance {@code instance}, its file named after {@code name}.
     */
    List<String> loaderBase(String name, String instance, String controlUrls) {
        return List.of(
                "--relay.loader.control-url=" + controlUrls,
                "--relay.dataplane.redis-uri=" + spec.redisUri(),
                "--relay.dataplane.key-prefix=" + dataplanePrefix(),
                "--relay.dataplane.secret-file="
                        + secrets.dataplaneKeysFile(LabSecrets.DataplaneDuty.LOADER),
                "--relay.loader.checksums=" + options.checksums(),
                "--relay.loader.heartbeat=" + LoaderTimings.LOADER_HEARTBEAT.toSeconds() + "s",
                secrets.springArg("loader-" + name, secrets.loaderService(instance)));
    }

    /**
     * The loader of rollout instance {@code instance} in a one-machine lab: {@link #loaderBase},
     * the lab's short lease ({@link LoaderTimings#LOADER_LEASE_TTL}), its node label from the
     * start, and {@code extraArgs} (a lab-only fault setting, say).
     */
    List<String> loader(String name, String instance, String controlUrls, List<String> extraArgs) {
        List<String> args = new ArrayList<>(loaderBase(name, instance, controlUrls));
        args.add("--relay.loader.lease-ttl=" + LoaderTimings.LOADER_LEASE_TTL.toSeconds() + "s");
        // The loader's node is known before its engine registers: it opens its data plane as it
        // starts, not inside the registration (a deployment sets it the same way).
        for (LabCatalog.LoaderSlot slot : slots) {
            if (slot.id().equals(instance)) {
                args.add("--relay.dataplane.node-label=" + slot.node());
            }
        }
        args.addAll(extraArgs);
        return args;
    }
}
