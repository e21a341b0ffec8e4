package io.weightrelay.lab.faults;

import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.model.GcReport;
import io.weightrelay.api.control.client.model.Lease;
import io.weightrelay.api.control.client.model.LeaseRequest;
import io.weightrelay.api.control.client.model.Loader;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Two control-api instances behind one Redis and key prefix, the first started with its clock five
 * minutes fast and the second five minutes slow ({@link SharedLab.Shape#SKEWED_PAIR}); publishers
 * and loaders are spread over both, so each instance judges registrations, heartbeats, leases and
 * session reports the other one took. The fault is there from the lab's start (no update is
 * interrupted): two publishes and updates must each reach every engine byte-exact; no loader is
 * ever declared dead (each stays live through both instances, on the epoch it registered with); a
 * 60 s lease taken through the slow instance holds against a collection through the fast one, and
 * once released the generation is collected through the slow one.
 */
final class ControlApiClockSkewCase implements FaultCase {

    /** The lease the case takes itself, through the slow instance. */
    private static final int LEASE_SECONDS = 60;

    @Override
    public String name() {
        return "control-api-clock-skew";
    }

    @Override
    public FaultResult run(FaultContext context) throws Exception {
        return SharedLab.prove(context, SharedLab.Shape.SKEWED_PAIR, this::prove);
    }

    private FaultResult prove(SharedLab.Borrowed b, long started) throws Exception {
        LabCluster lab = b.lab;
        Ledger ledger = new Ledger();
        int fast = 0;
        int slow = 1;
        Map<String, Long> epochs = registered(lab, ledger, null);

        long first = b.publish();
        LabUpdate updates = lab.updateAll();
        ledger.checkEngines(lab, updates.results());
        ledger.requireUpdatedTo(updates.results(), first, "update");
        ledger.requireHeld(lab, Set.of(first));

        long next = ledger.serveNext(lab, b.nextStep());
        ledger.requireCommitted(lab, first, next);

        // The first generation is retired now, and its loaders released their leases on it. One
        // loader takes a lease on it again, through the slow instance.
        String holder = lab.engines().get(0).instance();
        GenerationsApi slowAsLoader = lab.faults().controlApiAsLoader(slow, holder);
        GenerationsApi fastApi = lab.faults().controlApi(fast);
        GenerationsApi slowApi = lab.faults().controlApi(slow);
        String model = lab.spec().model();
        Lease lease =
                slowAsLoader.acquireLease(
                        model, first, new LeaseRequest().holder(holder).ttlSeconds(LEASE_SECONDS));
        Duration left = Duration.between(OffsetDateTime.now(), lease.getExpiresAt());
        ledger.require(
                left.compareTo(Duration.ofSeconds(LEASE_SECONDS - 30)) > 0
                        && left.compareTo(Duration.ofSeconds(LEASE_SECONDS + 1)) <= 0,
                "a "
                        + LEASE_SECONDS
                        + " s lease taken through the slow instance expires in "
                        + left
                        + " by this host's clock");

        GcReport held = fastApi.collectGarbage(model);
        ledger.require(
                held.getKept() != null && held.getKept().contains(first),
                "generation "
                        + first
                        + ", leased for "
                        + LEASE_SECONDS
                        + " s through the slow instance, was not kept by a collection through the"
                        + " fast one: "
                        + held);
        noteCollected(b, held);

        slowAsLoader.releaseLease(model, first, holder);
        GcReport freed = slowApi.collectGarbage(model);
        noteCollected(b, freed);
        ledger.require(
                freed.getCollected() != null && freed.getCollected().contains(first),
                "generation "
                        + first
                        + ", retired and its lease released, was not collected through the slow"
                        + " instance: "
                        + freed);

        Map<String, Long> after = registered(lab, ledger, epochs);
        return ledger.result(
                name(),
                "instances skewed "
                        + SharedLab.Shape.SKEWED_PAIR.skews()
                        + "; every engine updated to "
                        + first
                        + " then "
                        + next
                        + "; loaders live through both instances on their epochs "
                        + after
                        + "; lease held "
                        + first
                        + " against the fast instance's collection, released it was collected",
                started,
                claimsMidUpdate());
    }

    /**
     * Each engine's loader as both instances see it: live, and (when {@code expected} is given) on
     * the epoch it had then, so it was never declared dead and registered again. Returns the
     * epochs.
     */
    private static Map<String, Long> registered(
            LabCluster lab, Ledger ledger, Map<String, Long> expected) {
        Map<String, Long> epochs = new LinkedHashMap<>();
        for (int i = 0; i < lab.controlApiCount(); i++) {
            RegistryApi registry = new RegistryApi(lab.faults().controlApi(i).getApiClient());
            for (RolloutEngine engine : lab.engines()) {
                String instance = engine.instance();
                Loader loader = registry.getLoader(instance);
                ledger.require(
                        Boolean.TRUE.equals(loader.getAlive()),
                        "loader " + instance + " is not live through control-api instance " + i);
                Long was = expected != null ? expected.get(instance) : epochs.get(instance);
                ledger.require(
                        was == null || was.equals(loader.getEpoch()),
                        "loader "
                                + instance
                                + " is on epoch "
                                + loader.getEpoch()
                                + " through control-api instance "
                                + i
                                + ", not "
                                + was
                                + ": it was declared dead and registered again");
                epochs.put(instance, loader.getEpoch());
            }
        }
        return epochs;
    }

    /** Generations a collection removed need not stay committed for the lab's later users. */
    private static void noteCollected(SharedLab.Borrowed b, GcReport report) {
        if (report.getCollected() != null) {
            b.destroyed.addAll(report.getCollected());
        }
    }
}
