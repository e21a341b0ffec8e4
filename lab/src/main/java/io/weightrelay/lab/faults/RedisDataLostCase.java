package io.weightrelay.lab.faults;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.api.publisher.client.model.SegmentInfo;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.trainer.client.PublisherClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Fault case 5: the lab's Redis is killed with SIGKILL while an update runs and started again with
 * everything it saved deleted (append-only file included), as after losing the machine it ran on.
 * No service is restarted. They must notice on their own: control-api makes a new incarnation mark,
 * the publishers register their segments again (registry entry and data-plane descriptor), the
 * loaders their instances and receive segments. Generations whose records are gone are never served
 * (an update to them, or to an active generation nobody knows, ends without any engine advancing,
 * and every engine keeps every byte of what it held); each publisher frees the segment memory of
 * the generations Redis forgot (nobody else can: their directory entries went with Redis); the
 * trainer's next publish gets an id above every generation the engines hold, and every engine loads
 * it.
 */
public final class RedisDataLostCase extends MidUpdateCase {

    /** How long the services get to register again: a few heartbeats (5 s each). */
    static final Duration REREGISTER = Duration.ofSeconds(60);

    public RedisDataLostCase() {
        super("redis-data-lost");
    }

    @Override
    FaultResult prove(SharedLab.Borrowed b, long started) throws Exception {
        FaultResult result = proveWiped(b, started);
        // Redis forgot every generation the lab committed before.
        b.committed.clear();
        b.destroyed.clear();
        return result;
    }

    private FaultResult proveWiped(SharedLab.Borrowed b, long started) throws Exception {
        LabCluster lab = b.lab;
        Ledger ledger = new Ledger();
        MidUpdate update = RedisRestartCase.outage(b, ledger, true);
        long next = update.next();
        ledger.checkEngines(lab, update.outcomes());
        ledger.requireHeld(lab, Set.of(update.good(), next));
        Map<String, Long> held = new TreeMap<>();
        for (RolloutEngine engine : lab.engines()) {
            held.put(engine.instance(), engine.status().getGeneration());
        }

        // Every service registers again what it owns, on its own.
        List<String> missing = awaitRegistrations(lab);
        ledger.require(
                missing.isEmpty(), "not registered again within " + REREGISTER + ": " + missing);

        // The publishers free what the forgotten generations held in their segments (told the new
        // incarnation mark by their heartbeat): before the next publish, nothing is allocated.
        Map<String, Long> stillUsed = awaitSegmentsFreed(lab);
        ledger.require(
                stillUsed.isEmpty(),
                "segment bytes of generations Redis forgot still allocated after "
                        + REREGISTER
                        + ": "
                        + stillUsed);

        // Nothing whose records are gone is served: neither the active generation (nobody knows
        // one) nor, asked by id, what an engine holds.
        List<String> refused = new ArrayList<>();
        for (RolloutEngine engine : lab.engines()) {
            refused.add(refusal(ledger, engine, null, "the active generation"));
        }
        RolloutEngine first = lab.engines().get(0);
        Long firstHeld = held.get(first.instance());
        refused.add(refusal(ledger, first, firstHeld, "generation " + firstHeld));
        ledger.checkEngines(lab, List.of());
        for (RolloutEngine engine : lab.engines()) {
            ledger.require(
                    java.util.Objects.equals(
                            engine.status().getGeneration(), held.get(engine.instance())),
                    engine.instance() + " moved off " + held.get(engine.instance()));
        }

        // Engines paused by the failed update are rebuilt as an operator would; the trainer's
        // next publish gets an id above everything the engines hold, and every engine loads it.
        lab.reRegisterAll();
        long after = ledger.serveNext(lab, b.nextStep());
        long newestHeld = held.values().stream().mapToLong(g -> g == null ? 0 : g).max().orElse(0);
        ledger.require(
                after > Math.max(next, newestHeld),
                "the generation published after the loss, "
                        + after
                        + ", is not above "
                        + Math.max(next, newestHeld)
                        + ", which engines held");
        return ledger.result(
                name(),
                update.when("wiped")
                        + "; outcomes "
                        + update.outcomes().stream()
                                .map(p -> p.getOutcome() + "@" + p.getGeneration())
                                .toList()
                        + "; held "
                        + held
                        + "; every publisher's segment freed"
                        + "; afterwards refused "
                        + refused
                        + "; the next publish got "
                        + after
                        + " and every engine loaded it",
                started,
                claimsMidUpdate());
    }

    /**
     * Asks {@code engine}'s loader to update to {@code generation} (null: the active one), whose
     * records are gone: refused at once or ended without advancing, never UPDATED.
     */
    private static String refusal(Ledger ledger, RolloutEngine engine, Long generation, String what)
            throws InterruptedException {
        UpdateProgress end;
        try {
            end =
                    engine.await(
                            engine.start(generation, Duration.ofMinutes(2)).getUpdateId(),
                            Duration.ofMillis(20));
        } catch (RuntimeException refusedAtOnce) {
            return engine.instance() + " refused: " + LabCase.firstLine(refusedAtOnce.getMessage());
        }
        ledger.require(
                end.getOutcome() != UpdateOutcome.UPDATED,
                engine.instance()
                        + ": an update to "
                        + what
                        + ", whose records are gone, ended"
                        + " UPDATED at "
                        + end.getGeneration());
        return engine.instance() + " " + end.getOutcome();
    }

    /**
     * Waits until no trainer node's segment holds an allocation (what the forgotten generations
     * held freed, and nothing published since); returns the bytes still used per segment then.
     */
    private static Map<String, Long> awaitSegmentsFreed(LabCluster lab)
            throws InterruptedException {
        List<PublisherClient> publishers = new ArrayList<>();
        for (int i = 0; i < lab.spec().trainerNodes(); i++) {
            publishers.add(
                    PublisherClient.connect(
                            lab.publisherUrl(i), lab.trainerToken(), Duration.ofSeconds(30)));
        }
        long deadline = System.nanoTime() + REREGISTER.toNanos();
        Map<String, Long> used;
        do {
            used = new TreeMap<>();
            for (PublisherClient p : publishers) {
                SegmentInfo info = p.segment();
                if (info.getUsed() > 0) {
                    used.put(info.getSegment(), info.getUsed());
                }
            }
            if (used.isEmpty()) {
                return used;
            }
            Thread.sleep(500);
        } while (System.nanoTime() < deadline);
        return used;
    }

    /**
     * Waits until the registry has every loader and segment again and the data plane every
     * segment's descriptor; returns what is still missing then.
     */
    private static List<String> awaitRegistrations(LabCluster lab) throws InterruptedException {
        LabCluster.Spec spec = lab.spec();
        List<String> keys = new ArrayList<>();
        for (RolloutEngine engine : lab.engines()) {
            keys.add(lab.controlPrefix() + "loader:" + engine.instance());
        }
        for (int i = 0; i < spec.trainerNodes(); i++) {
            String segment = lab.segmentNameOf(Topology.trainerNodeName(i));
            keys.add(lab.controlPrefix() + "segment:" + segment);
            keys.add(lab.dataplanePrefix() + "seg:" + segment);
        }
        RedisClient client = RedisClient.create(spec.redisUri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            long deadline = System.nanoTime() + REREGISTER.toNanos();
            List<String> missing;
            do {
                missing = new ArrayList<>();
                for (String key : keys) {
                    if (redis.exists(key) == 0) {
                        missing.add(key);
                    }
                }
                if (missing.isEmpty()) {
                    return missing;
                }
                Thread.sleep(250);
            } while (System.nanoTime() < deadline);
            return missing;
        } finally {
            client.shutdown(0, 1, TimeUnit.SECONDS);
        }
    }
}
