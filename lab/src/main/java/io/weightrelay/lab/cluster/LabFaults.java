package io.weightrelay.lab.cluster;

import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.trainer.client.TensorSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.BiFunction;
import java.util.function.UnaryOperator;

/**
 * How the fault suite ({@code io.weightrelay.lab.faults}) and the lab tests break a running lab
 * ({@link LabCluster#faults()}): kill a service as a crash would and start it again, restart the
 * whole lab from nothing but files on disk, name a process to freeze it, call one control-api
 * instance alone, flip a stored byte, hold a publish mid-way. Every hook is the lab's; none is in
 * the services. Not thread safe.
 */
public final class LabFaults {

    private final LabCluster.Spec spec;
    private final LabServiceArgs args;
    private final LabProcesses processes;
    private final LabServices services;
    private final SimulatedEngines engines;
    private final LabSecrets secrets;

    /** control-api at the given URLs with the given token. */
    private final BiFunction<String, String, ApiClient> client;

    /** Starts every service again and registers the engines, showing the logs if that fails. */
    private final StartedOrClosed.Step startAgain;

    LabFaults(
            LabCluster.Spec spec,
            LabServiceArgs args,
            LabProcesses processes,
            LabServices services,
            SimulatedEngines engines,
            LabSecrets secrets,
            BiFunction<String, String, ApiClient> client,
            StartedOrClosed.Step startAgain) {
        this.spec = spec;
        this.args = args;
        this.processes = processes;
        this.services = services;
        this.engines = engines;
        this.secrets = secrets;
        this.client = client;
        this.startAgain = startAgain;
    }

    /**
     * A full restart with nothing surviving but files on disk: stops every service, deletes every
     * Redis key of this lab's run (control plane and store directory, only {@code wr:lab:<run>:}),
     * removes every shared-memory file the lab's services made, then starts fresh services with the
     * same settings and registers the engines again. The fresh control-api knows no generation; the
     * fresh publishers own empty segments.
     */
    public void restartFromScratch() throws Exception {
        restartFromScratch(() -> null);
    }

    /**
     * As {@link #restartFromScratch()}, calling {@code whileDown} once every service has stopped
     * and Redis and shared memory are wiped, before anything starts again.
     */
    public void restartFromScratch(Callable<?> whileDown) throws Exception {
        processes.stopAll();
        services.forgetAll();
        engines.clear();
        LabStore.deleteKeys(spec.redisUri(), args.controlPrefix());
        for (Path f : LabStore.shmFiles(args.run())) {
            Files.deleteIfExists(f);
        }
        whileDown.call();
        startAgain.run();
    }

    // ---- control-api ----

    /** control-api instance {@code index} alone (no failover), with the operator token. */
    public GenerationsApi controlApi(int index) {
        return new GenerationsApi(client.apply(services.controlUrl(index), secrets.operator()));
    }

    /**
     * control-api instance {@code index} alone (no failover), with loader {@code instance}'s token
     * (bound to it: leases in its name only).
     */
    public GenerationsApi controlApiAsLoader(int index, String instance) {
        return new GenerationsApi(
                client.apply(services.controlUrl(index), secrets.loader(instance)));
    }

    /**
     * Kills control-api instance {@code index} with SIGKILL, as a crash would, and leaves it dead;
     * the others keep serving from the same Redis.
     */
    public void killControlApi(int index) {
        services.killControlApi(index);
    }

    /**
     * Starts control-api instance {@code index}, which {@link #killControlApi(int)} killed, again
     * on the same port with the same settings (its clients were given that URL and are told
     * nothing), and returns once it answers its health check. Its log is {@code
     * control-api-restarted-<n>.log}.
     */
    public void startControlApiAgain(int index) throws InterruptedException {
        services.startControlApiAgain(index);
    }

    // ---- Publishers and storage units ----

    /**
     * Kills trainer node {@code index}'s publisher as a crash would and starts it again with the
     * same settings: same node and segment name, new HTTP and data-plane ports (the simulated
     * trainer is pointed at the new HTTP one). What the killed process stored is gone with it; the
     * new one purges its directory entries before storing anything.
     */
    public void restartPublisher(int index) throws Exception {
        String node = services.killPublisher(index);
        startPublisherAgain(node, "publisher-" + node + "-restarted");
    }

    /**
     * Kills trainer node {@code index}'s publisher as a crash would and leaves it dead: its segment
     * descriptor and directory entries stay in Redis, its engine answers no more.
     *
     * @return the name of its segment
     */
    public String killPublisher(int index) {
        // a killed owner leaves its segment's file: reclaimed when the lab closes (or when the
        // next data plane opens on this host)
        return args.segmentName(services.killPublisher(index));
    }

    /**
     * Starts trainer node {@code index}'s publisher again after {@link #killPublisher(int)} left it
     * dead: same node and segment name, as an operator's restart would (it re-creates the segment,
     * so what the dead one stored is reported lost).
     */
    public void revivePublisher(int index) throws Exception {
        String node = Topology.trainerNodeName(index);
        if (services.publisherRuns(node)) {
            throw new IllegalStateException("the publisher of " + node + " is running");
        }
        startPublisherAgain(node, "publisher-" + node + "-revived-" + System.nanoTime());
    }

    /**
     * Starts node {@code node}'s publisher with the settings it first had, and connects the
     * trainer.
     */
    private void startPublisherAgain(String node, String name) throws InterruptedException {
        services.startPublisherAgain(node, name);
        engines.connectTrainer(services.publisherUrls(), services.controlUrls());
    }

    /**
     * The process id of trainer node {@code index}'s publisher (the client-only one in a lab of
     * storage units).
     */
    public long publisherPid(int index) {
        return services.publisher(index).pid();
    }

    /**
     * The simulated trainer publishes the generation of {@code step} with its bytes passed through
     * {@code wrap}: a fault case wraps the generator to hold the ranks mid-publish while it kills a
     * process (a hook of the lab's trainer, none in the services).
     */
    public long publish(long step, UnaryOperator<TensorSource> wrap) {
        return engines.publish(step, wrap);
    }

    // ---- Loaders ----

    /** The process id of instance {@code index}'s loader (to signal it, or freeze it). */
    public long loaderPid(int index) {
        return services.loader(index).pid();
    }

    /** Kills instance {@code index}'s loader at once (SIGKILL) and leaves it dead. */
    public void killLoader(int index) {
        services.loader(index).kill();
    }

    /**
     * Kills instance {@code index}'s loader, starts a fresh one with {@code extraArgs} added (a
     * lab-only fault setting, say) and registers the engine again in the lab's group.
     */
    public RolloutEngine restartLoader(int index, List<String> extraArgs) throws Exception {
        String suffix = "-" + System.nanoTime();
        ServiceProcess fresh = services.replaceLoaders(List.of(index), suffix, extraArgs).get(0);
        return engines.replace(index, fresh.baseUrl(), "lab");
    }

    // ---- The store ----

    /**
     * Flips one byte of a stored object right in its segment's shared-memory file, as a bad DIMM or
     * a stray write would: the object directory and the checksum registered at publish stay as they
     * were. Returns the segment file written.
     *
     * @param key the object's store key ({@code model/generation/fragment})
     * @param objectOffset the byte of the object to flip
     */
    public Path corruptStoredByte(String key, long objectOffset) throws IOException {
        return LabStore.corruptStoredByte(
                spec.redisUri(), args.dataplanePrefix(), key, objectOffset);
    }

    /**
     * Flips the middle byte of the first non-empty stored object of {@code generation} in its
     * segment ({@link #corruptStoredByte}): every loader that reads the generation meets a corrupt
     * object, whose checksum fails the update's proof.
     *
     * @return the object's fragment
     */
    public StoredFragment corruptAnObject(long generation) throws IOException {
        SourceManifest manifest = engines.manifest();
        StoredFragment victim =
                manifest.fragments().stream().filter(f -> f.bytes() > 0).findFirst().orElseThrow();
        corruptStoredByte(
                new GenerationId(manifest.model(), generation).objectKey(victim.fragment()),
                victim.bytes() / 2);
        return victim;
    }

    /** How many store objects of {@code generation} the object directory still lists. */
    public long storedObjects(long generation) {
        return LabStore.countKeys(
                spec.redisUri(),
                args.dataplanePrefix() + "obj:" + spec.model() + "/" + generation + "/");
    }
}
