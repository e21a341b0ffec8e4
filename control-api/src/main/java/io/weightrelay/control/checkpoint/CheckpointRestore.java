package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointManifest;
import io.weightrelay.api.control.model.CheckpointObject;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.GenerationRestore;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.control.store.ObjectStore;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.service.problem.CommonProblems;
import java.nio.file.Path;
import java.time.Clock;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * Restores a generation from a checkpoint directory alone (not its Redis record, not the segments
 * that held it) into the live segment owners, keeping its id.
 */
@Service
public class CheckpointRestore {

    private static final Logger log = LoggerFactory.getLogger(CheckpointRestore.class);

    private final GenerationRestore restores;
    private final Registry registry;
    private final ObjectStore store;
    private final OwnerCalls calls;
    private final CheckpointDirectory directories;
    private final CheckpointRecords records;
    private final Clock clock;

    CheckpointRestore(
            GenerationRestore restores,
            Registry registry,
            ObjectStore store,
            OwnerCalls calls,
            CheckpointDirectory directories,
            CheckpointRecords records,
            Clock clock) {
        this.restores = restores;
        this.registry = registry;
        this.store = store;
        this.calls = calls;
        this.directories = directories;
        this.records = records;
        this.clock = clock;
    }

    /**
     * Restores the checkpoint in {@code directory}, needing nothing but the directory and live
     * segment owners.
     */
    public Generation restore(String model, Long generation, String directory) {
        Path dir = CheckpointDirectory.absolute(directory);
        CheckpointManifest m = directories.read(dir);
        GenerationQueries.requireSameModel(model, m.getModel());
        if (generation != null && generation != m.getGeneration()) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "the checkpoint in "
                            + dir
                            + " holds generation "
                            + m.getGeneration()
                            + ", not "
                            + generation);
        }
        long g = m.getGeneration();
        // Every manifest object is in the checkpoint, with its manifest size.
        io.weightrelay.reshard.manifest.SourceManifest source =
                io.weightrelay.control.generation.ManifestMapper.toReshard(m.getManifest());
        Map<String, CheckpointObject> byKey = new HashMap<>();
        for (CheckpointObject o : m.getObjects()) {
            byKey.put(o.getKey(), o);
        }
        for (io.weightrelay.reshard.manifest.StoredFragment f : source.fragments()) {
            String key = ObjectKeys.key(model, g, f.fragment());
            CheckpointObject o = byKey.get(key);
            if (o == null || o.getSize() != f.bytes()) {
                throw CheckpointProblems.CHECKPOINT_INCOMPLETE
                        .exception(
                                "the checkpoint in "
                                        + dir
                                        + (o == null ? " lacks object " : " has the wrong size of ")
                                        + key)
                        .with("object", key);
            }
        }
        if (byKey.size() != source.fragments().size()) {
            throw CheckpointProblems.CHECKPOINT_INCOMPLETE.exception(
                    "the checkpoint lists "
                            + byKey.size()
                            + " objects, its manifest has "
                            + source.fragments().size());
        }
        List<SegmentOwner> live =
                registry.liveSegments().stream()
                        .filter(s -> s.getAlive() && s.getAdminUrl() != null && s.getSize() > 0)
                        .sorted(Comparator.comparing(SegmentOwner::getSegment))
                        .toList();
        List<String> keysOf = new ArrayList<>(byKey.keySet());
        long started = System.nanoTime();
        List<OwnerCheckpoint> results = new ArrayList<>();
        // An owner that cannot be reached (gone since its last heartbeat) is left out and the
        // objects are spread again over the others; bytes that fail their checksum fail at once.
        for (int attempt = 0; ; attempt++) {
            if (live.isEmpty()) {
                store.remove(keysOf);
                throw CheckpointProblems.NO_OWNERS
                        .exception(
                                "no live segment owner with an admin URL is registered to restore"
                                        + " into")
                        .with("owners", results);
            }
            Map<String, List<OwnerCheckpointObject>> plan = spread(m.getObjects(), live);
            Map<String, OwnerCheckpointResult> answers =
                    new java.util.concurrent.ConcurrentHashMap<>();
            List<OwnerCheckpoint> round =
                    calls.restore(
                            plan.keySet(),
                            segment ->
                                    new OwnerCheckpointRequest()
                                            .model(model)
                                            .generation(g)
                                            .directory(dir.toString())
                                            .objects(plan.get(segment)),
                            answers);
            results.addAll(round);
            List<OwnerCheckpoint> failed =
                    round.stream().filter(r -> r.getError() != null).toList();
            if (failed.isEmpty()) {
                break;
            }
            boolean fatal = failed.stream().anyMatch(r -> r.getError().matches("(?s)^4\\d\\d .*"));
            if (fatal || attempt >= 2) {
                // Nothing is registered; what was re-stored is removed, so no half is left.
                long removed = store.remove(keysOf);
                throw CheckpointProblems.RESTORE_FAILED
                        .exception(
                                OwnerCalls.failedMessage(
                                        failed,
                                        round.size(),
                                        "restore generation "
                                                + g
                                                + " ("
                                                + removed
                                                + " re-stored object(s) removed again)"))
                        .with("owners", results);
            }
            java.util.Set<String> out = new java.util.HashSet<>();
            failed.forEach(r -> out.add(r.getSegment()));
            log.warn(
                    "restore of generation {}: owner(s) {} failed, spreading over the others: {}",
                    g,
                    out,
                    failed.get(0).getError());
            live = live.stream().filter(s -> !out.contains(s.getSegment())).toList();
        }
        Map<String, List<String>> where = store.locations(keysOf);
        Map<String, String> registeredObjects = new HashMap<>();
        for (CheckpointObject o : m.getObjects()) {
            List<String> segments = where.get(o.getKey());
            if (segments == null || segments.isEmpty()) {
                throw CheckpointProblems.RESTORE_FAILED
                        .exception("object " + o.getKey() + " is not in the store after restore")
                        .with("object", o.getKey());
            }
            registeredObjects.put(
                    o.getKey(),
                    o.getSize() + "|" + o.getChecksum() + "|" + String.join(",", segments));
        }
        GenerationRestore.RestoreOutcome outcome =
                restores.register(
                        new GenerationRestore.Restored(
                                model,
                                g,
                                m.getTrainerStep(),
                                m.getManifest(),
                                m.getManifestDigest(),
                                m.getTrainerTopology(),
                                m.getTrainerTopologyDigest(),
                                m.getCommittedAt()),
                        registeredObjects);
        double seconds = (System.nanoTime() - started) / 1e9;
        records.saved(
                model,
                g,
                dir,
                m.getSavedAt(),
                m.getBytes(),
                null,
                m.getOwners(),
                clock.instant().atOffset(ZoneOffset.UTC));
        log.info(
                "model {}: generation {} restored from {} by {} owner(s) in {} s, now {}{}",
                model,
                g,
                dir,
                results.size(),
                seconds,
                outcome.generation().getState(),
                outcome.active() ? "" : " (generation " + outcome.other() + " is newer)");
        return outcome.generation();
    }

    /**
     * Each object goes to one owner, into that owner's own segment: largest first to the owner with
     * the fewest bytes so far, so the bytes spread evenly over the owners present.
     */
    static Map<String, List<OwnerCheckpointObject>> spread(
            List<CheckpointObject> objects, List<SegmentOwner> owners) {
        List<CheckpointObject> sorted = new ArrayList<>(objects);
        sorted.sort(
                Comparator.comparingLong(CheckpointObject::getSize)
                        .reversed()
                        .thenComparing(CheckpointObject::getKey));
        long[] load = new long[owners.size()];
        Map<String, List<OwnerCheckpointObject>> plan = new LinkedHashMap<>();
        for (CheckpointObject o : sorted) {
            int best = 0;
            for (int i = 1; i < load.length; i++) {
                if (load[i] < load[best]) {
                    best = i;
                }
            }
            load[best] += o.getSize();
            plan.computeIfAbsent(owners.get(best).getSegment(), s -> new ArrayList<>())
                    .add(
                            new OwnerCheckpointObject()
                                    .key(o.getKey())
                                    .size(o.getSize())
                                    .checksum(o.getChecksum())
                                    ._file(o.getFile())
                                    .offset(o.getOffset()));
        }
        // Each owner reads its files front to back.
        plan.values()
                .forEach(
                        l ->
                                l.sort(
                                        Comparator.comparing(OwnerCheckpointObject::getFile)
                                                .thenComparingLong(
                                                        OwnerCheckpointObject::getOffset)));
        return plan;
    }
}
