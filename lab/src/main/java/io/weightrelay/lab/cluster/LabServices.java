package io.weightrelay.lab.cluster;

import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.SegmentRole;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.testkit.process.ServiceProcess;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Which process serves which role in one lab (control-api instances, publishers, storage units,
 * loaders): starting them in the order they depend on each other, and killing and restarting them
 * by role with the settings they first had. Not thread safe.
 */
final class LabServices {

    private final LabCluster.Spec spec;
    private final LabOptions options;
    private final SourceManifest manifest;
    private final List<LabCatalog.LoaderSlot> slots;
    private final LabServiceArgs args;
    private final LabProcesses processes;

    /** control-api at the given URLs with the operator token. */
    private final Function<String, ApiClient> operatorClient;

    /** Every control-api instance, the first one first; all share the lab's Redis and prefix. */
    private final List<ServiceProcess> controls = new ArrayList<>();

    /** What each control-api instance was started with, by index (a restart reuses them). */
    private final List<List<String>> controlArgs = new ArrayList<>();

    /** How many clients (publishers, loaders) were given control-api URLs so far. */
    private int clientsSpread;

    private final Map<String, ServiceProcess> publishers = new LinkedHashMap<>();
    private final Map<String, List<String>> publisherArgs = new LinkedHashMap<>();

    /** The storage unit of each trainer node (node to process) when the lab runs them. */
    private final Map<String, ServiceProcess> units = new LinkedHashMap<>();

    private final List<ServiceProcess> loaders = new ArrayList<>();

    LabServices(
            LabCluster.Spec spec,
            LabOptions options,
            SourceManifest manifest,
            List<LabCatalog.LoaderSlot> slots,
            LabServiceArgs args,
            LabProcesses processes,
            Function<String, ApiClient> operatorClient) {
        this.spec = spec;
        this.options = options;
        this.manifest = manifest;
        this.slots = slots;
        this.args = args;
        this.processes = processes;
        this.operatorClient = operatorClient;
    }

    /**
     * Starts every service and waits until all are healthy and every store segment is registered. A
     * restart from scratch calls it again once {@link #forgetAll()} forgot the stopped ones.
     */
    void startAll() throws InterruptedException {
        String controlSecrets = args.controlApiSecretsArg();
        controls.clear();
        controlArgs.clear();
        for (int i = 0; i < options.controlApis(); i++) {
            List<String> a = args.controlApi(i, controlSecrets);
            controlArgs.add(a);
            controls.add(
                    processes.start(
                            i == 0 ? "control-api" : "control-api-" + i, "control-api", "512m", a));
        }
        if (options.storageUnits()) {
            // The units first, registered with control-api, so each client-only publisher knows
            // the unit of its node from its first put on.
            processes.awaitHealthy(List.of(control()));
            startStorageUnits();
            processes.awaitHealthy(units.values());
            awaitSegmentsRegistered(SegmentRole.STORAGE_UNIT, units.size());
        }
        startPublishers();
        for (LabCatalog.LoaderSlot slot : slots) {
            loaders.add(startLoader(slot.id(), slot.id(), List.of()));
        }
        processes.awaitAllHealthy();
        if (!options.storageUnits()) {
            // A publisher registers its segment once it is ready, on its heartbeat's first beat:
            // healthy is not yet registered, and a save or restore needs every owner registered.
            awaitSegmentsRegistered(SegmentRole.TRAINER, publishers.size());
        }
    }

    /** Forgets every role's process, once {@link LabProcesses#stopAll()} stopped them. */
    void forgetAll() {
        loaders.clear();
        publishers.clear();
        units.clear();
        publisherArgs.clear();
    }

    /** Waits until {@code expected} segments of {@code role} are registered and alive. */
    private void awaitSegmentsRegistered(SegmentRole role, int expected)
            throws InterruptedException {
        RegistryApi registry = new RegistryApi(operatorClient.apply(control().baseUrl()));
        long deadline = System.nanoTime() + LabProcesses.HEALTHY.toNanos();
        while (true) {
            long alive =
                    registry.listSegments().stream()
                            .filter(s -> Boolean.TRUE.equals(s.getAlive()) && s.getRole() == role)
                            .count();
            if (alive >= expected) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        alive
                                + " of "
                                + expected
                                + " "
                                + role
                                + " segments registered within "
                                + LabProcesses.HEALTHY);
            }
            Thread.sleep(50);
        }
    }

    // ---- control-api ----

    /** The first control-api instance. */
    ServiceProcess control() {
        return controls.get(0);
    }

    /** control-api instance {@code index}'s URL. */
    String controlUrl(int index) {
        return controls.get(index).baseUrl();
    }

    int controlApiCount() {
        return controls.size();
    }

    /** Every control-api instance's URL, comma-separated. */
    String controlUrls() {
        return String.join(",", controls.stream().map(ServiceProcess::baseUrl).toList());
    }

    /**
     * The control-api URLs the next client started is given: {@link #controlUrls()}, or in a lab of
     * skewed instances the list rotated so that clients take turns at which instance they list
     * first.
     */
    private String controlUrlsForNextClient() {
        if (options.controlApiSkews().isEmpty()) {
            return controlUrls();
        }
        List<String> urls =
                new ArrayList<>(controls.stream().map(ServiceProcess::baseUrl).toList());
        Collections.rotate(urls, -(clientsSpread++ % urls.size()));
        return String.join(",", urls);
    }

    void killControlApi(int index) {
        processes.killAndForget(controls.get(index));
    }

    /**
     * Starts control-api instance {@code index} again on its port and waits until it is healthy.
     */
    void startControlApiAgain(int index) throws InterruptedException {
        ServiceProcess fresh =
                processes.restartControlApi(controls.get(index), controlArgs.get(index));
        controls.set(index, fresh);
        processes.awaitHealthy(List.of(fresh));
    }

    // ---- Publishers and storage units ----

    /** One storage unit per trainer node, serving no trainer. */
    private void startStorageUnits() {
        long segment = LabCatalog.publisherSizes(manifest, spec.trainerNodes())[0];
        for (int i = 0; i < spec.trainerNodes(); i++) {
            String node = Topology.trainerNodeName(i);
            units.put(
                    node,
                    processes.start(
                            "unit-" + node,
                            "publisher-service",
                            "384m",
                            args.storageUnit(node, segment, controlUrls())));
        }
    }

    private void startPublishers() {
        long[] sizes = LabCatalog.publisherSizes(manifest, spec.trainerNodes());
        long segment = options.segmentBytes() > 0 ? options.segmentBytes() : sizes[0];
        for (int i = 0; i < spec.trainerNodes(); i++) {
            String node = Topology.trainerNodeName(i);
            List<String> a = args.publisher(node, segment, sizes[1], controlUrlsForNextClient());
            publisherArgs.put(node, a);
            publishers.put(
                    node, processes.start("publisher-" + node, "publisher-service", "384m", a));
        }
    }

    /** Each running publisher's URL by trainer node. */
    Map<String, String> publisherUrls() {
        Map<String, String> out = new LinkedHashMap<>();
        publishers.forEach((node, p) -> out.put(node, p.baseUrl()));
        return out;
    }

    /** Trainer node {@code index}'s publisher, while it runs. */
    ServiceProcess publisher(int index) {
        return publishers.get(Topology.trainerNodeName(index));
    }

    /** Trainer node {@code index}'s storage unit. */
    ServiceProcess storageUnit(int index) {
        return units.get(Topology.trainerNodeName(index));
    }

    /** Kills trainer node {@code index}'s publisher as a crash would; returns its node. */
    String killPublisher(int index) {
        String node = Topology.trainerNodeName(index);
        processes.killAndForget(publishers.remove(node));
        return node;
    }

    /**
     * Starts node {@code node}'s publisher, under process name {@code name}, with the settings it
     * first had, and waits until it is healthy.
     */
    void startPublisherAgain(String node, String name) throws InterruptedException {
        ServiceProcess fresh =
                processes.start(name, "publisher-service", "384m", publisherArgs.get(node));
        processes.awaitHealthy(List.of(fresh));
        publishers.put(node, fresh);
    }

    boolean publisherRuns(String node) {
        return publishers.containsKey(node);
    }

    // ---- Loaders ----

    private ServiceProcess startLoader(String name, String instance, List<String> extraArgs) {
        return processes.start(
                "loader-" + name,
                "loader-service",
                "384m",
                args.loader(name, instance, controlUrlsForNextClient(), extraArgs));
    }

    /** Instance {@code index}'s loader. */
    ServiceProcess loader(int index) {
        return loaders.get(index);
    }

    /**
     * Kills the loaders of {@code indexes} as a crash would, starting a fresh one for each (named
     * {@code <instance><suffix>}, with {@code extraArgs}), waits until each is healthy and serves
     * its instance; returns them in the order of {@code indexes}.
     */
    List<ServiceProcess> replaceLoaders(
            List<Integer> indexes, String suffix, List<String> extraArgs)
            throws InterruptedException {
        List<ServiceProcess> fresh = new ArrayList<>();
        for (int index : indexes) {
            processes.killAndForget(loaders.get(index));
            String id = slots.get(index).id();
            fresh.add(startLoader(id + suffix, id, extraArgs));
        }
        for (int i = 0; i < indexes.size(); i++) {
            processes.awaitHealthy(List.of(fresh.get(i)));
            loaders.set(indexes.get(i), fresh.get(i));
        }
        return fresh;
    }

    /** Each running loader's URL, in the order of the lab's loader slots. */
    List<String> loaderUrls() {
        return loaders.stream().map(ServiceProcess::baseUrl).toList();
    }

    /**
     * The operating-system ids of the services by role ({@code control-api}, {@code publishers},
     * {@code loaders}, and {@code storage-units} where the lab runs them), as they run now.
     */
    Map<String, List<Long>> pids() {
        Map<String, List<Long>> out = new LinkedHashMap<>();
        out.put("control-api", controls.stream().map(ServiceProcess::pid).toList());
        out.put("publishers", publishers.values().stream().map(ServiceProcess::pid).toList());
        out.put("loaders", loaders.stream().map(ServiceProcess::pid).toList());
        if (!units.isEmpty()) {
            out.put("storage-units", units.values().stream().map(ServiceProcess::pid).toList());
        }
        return out;
    }
}
