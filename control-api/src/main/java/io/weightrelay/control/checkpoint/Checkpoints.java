package io.weightrelay.control.checkpoint;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.common.model.TensorSpec;
import io.weightrelay.api.control.model.CheckpointManifest;
import io.weightrelay.api.control.model.CheckpointObject;
import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.CheckpointStatus;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.generation.GenerationProblems;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.GenerationRestore;
import io.weightrelay.control.generation.Leases;
import io.weightrelay.control.generation.ManifestStore;
import io.weightrelay.control.generation.StoredGeneration;
import io.weightrelay.control.redis.RedisTime;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.control.store.ObjectStore;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.files.DirectoryFiles;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * Saves a committed generation into a checkpoint directory ({@link CheckpointDirectory}) and
 * restores one from it, through the segment owners. Which owners hold a generation comes from the
 * store's own object directory, so a save calls exactly those owners and no GPU process; a restore
 * needs nothing but the directory and live owners (not the generation's Redis record, not the
 * segments that held it), and keeps the generation's id.
 */
@Service
public class Checkpoints {

    private final GenerationQueries generations;
    private final ManifestStore manifests;
    private final GenerationRestore restores;
    private final Leases leases;
    private final Registry registry;
    private final ObjectStore store;
    private final OwnerClient owners;
    private final OwnerCalls ownerCalls;
    private final CheckpointDirectory directories;
    private final CheckpointRecords records;
    private final CheckpointProperties properties;
    private final RedisTime time;

    Checkpoints(
            GenerationQueries generations,
            ManifestStore manifests,
            GenerationRestore restores,
            Leases leases,
            Registry registry,
            ObjectStore store,
            OwnerClient owners,
            OwnerCalls ownerCalls,
            CheckpointDirectory directories,
            CheckpointRecords records,
            CheckpointProperties properties,
            RedisTime time) {
        this.generations = generations;
        this.manifests = manifests;
        this.restores = restores;
        this.leases = leases;
        this.registry = registry;
        this.store = store;
        this.owners = owners;
        this.ownerCalls = ownerCalls;
        this.directories = directories;
        this.records = records;
        this.properties = properties;
        this.time = time;
    }

    private static final Logger log = LoggerFactory.getLogger(Checkpoints.class);

    // ---- save ----------------------------------------------------------------------------------

    /**
     * Saves a committed generation into {@code directory}. The save holds a lease on the generation
     * from before it reads where the objects are until its marker is written, so garbage collection
     * never removes a retired generation under it; it writes into a fresh save directory and
     * replaces the checkpoint there only when complete ({@link CheckpointDirectory}).
     */
    public CheckpointReport save(GenerationId id, String directory) {
        long started = System.nanoTime();
        StoredGeneration g = committed(id);
        Path dir = directories.confined(directory);
        String holder = "checkpoint-save:" + java.util.UUID.randomUUID();
        try (SaveLease lease = new SaveLease(id, holder)) {
            CheckpointDirectory.Save save = directories.begin(dir, id.generation());
            boolean done = false;
            try {
                CheckpointReport report = saveLeased(id, g, save, started);
                done = true;
                return report;
            } finally {
                if (!done) {
                    directories.abandon(save);
                }
            }
        }
    }

    /**
     * A lease held for a whole save: taken at once (refused, 409, when the generation is being
     * collected or lost), renewed while the save runs, released at its end.
     */
    private final class SaveLease implements AutoCloseable {
        private final GenerationId id;
        private final String holder;
        private final java.util.concurrent.ScheduledExecutorService renewals;

        SaveLease(GenerationId id, String holder) {
            this.id = id;
            this.holder = holder;
            leases.lease(id, holder, SAVE_LEASE_SECONDS);
            renewals =
                    Executors.newSingleThreadScheduledExecutor(
                            io.weightrelay.service.concurrent.DaemonThreads.named(
                                    "checkpoint-lease"));
            renewals.scheduleWithFixedDelay(
                    this::renew,
                    SAVE_LEASE_SECONDS / 3,
                    SAVE_LEASE_SECONDS / 3,
                    java.util.concurrent.TimeUnit.SECONDS);
        }

        private void renew() {
            try {
                leases.lease(id, holder, SAVE_LEASE_SECONDS);
            } catch (RuntimeException e) {
                log.warn(
                        "cannot renew the lease of the save of {}/{}: {}",
                        id.model(),
                        id.generation(),
                        e.getMessage());
            }
        }

        @Override
        public void close() {
            renewals.shutdownNow();
            try {
                leases.release(id, holder);
            } catch (RuntimeException e) {
                // it expires on its own
                log.warn(
                        "cannot release the lease of the save of {}/{}: {}",
                        id.model(),
                        id.generation(),
                        e.getMessage());
            }
        }
    }

    /** How long a save's lease lasts unless renewed (every third of it while the save runs). */
    static final int SAVE_LEASE_SECONDS = 60;

    private CheckpointReport saveLeased(
            GenerationId id, StoredGeneration g, CheckpointDirectory.Save save, long started) {
        Path dir = save.directory();
        List<String> objectKeys = manifests.objectKeys(id, g.manifestDigest());
        Map<String, List<String>> locations = store.locations(objectKeys);
        List<String> missing = new ArrayList<>();
        Map<String, Long> expectedPerSegment = new TreeMap<>();
        for (String key : objectKeys) {
            List<String> segments = locations.get(key);
            if (segments == null || segments.isEmpty()) {
                missing.add(key);
                continue;
            }
            for (String segment : segments) {
                expectedPerSegment.merge(segment, 1L, Long::sum);
            }
        }
        if (!missing.isEmpty()) {
            throw CheckpointProblems.OBJECTS_NOT_STORED
                    .exception(
                            missing.size()
                                    + " object(s) of generation "
                                    + id.generation()
                                    + " are not in the store (or are held by no live segment"
                                    + " owner); a checkpoint would be unusable")
                    .with("objects", missing.subList(0, Math.min(20, missing.size())));
        }
        // Each owner gets the published checksums of what it holds, and saves only matching bytes.
        Map<String, String> checksums = generations.registeredChecksums(id);
        Map<String, Map<String, String>> checksumsPerSegment = new TreeMap<>();
        checksums.forEach(
                (key, checksum) -> {
                    for (String segment : locations.getOrDefault(key, List.of())) {
                        checksumsPerSegment
                                .computeIfAbsent(segment, x -> new TreeMap<>())
                                .put(key, checksum);
                    }
                });
        Map<String, OwnerCheckpointResult> answers = new java.util.concurrent.ConcurrentHashMap<>();
        List<OwnerCheckpoint> results =
                ownerCalls.call(
                        expectedPerSegment.keySet(),
                        segment ->
                                OwnerCalls.request(id, save.files())
                                        .checksums(
                                                checksumsPerSegment.getOrDefault(
                                                        segment, Map.of())),
                        owners::save,
                        answers);
        for (OwnerCheckpoint r : results) {
            long expected = expectedPerSegment.getOrDefault(r.getSegment(), 0L);
            if (r.getError() == null && r.getObjects() != expected) {
                r.setError("saved " + r.getObjects() + " objects, the store says " + expected);
            }
            if (r.getError() == null && r.getFile() != null) {
                if (!plainName(r.getFile())) {
                    r.setError("answered file '" + r.getFile() + "', not a plain file name");
                } else {
                    r.setFile(save.name(r.getFile()));
                }
            }
        }
        List<OwnerCheckpoint> failed = results.stream().filter(r -> r.getError() != null).toList();
        if (!failed.isEmpty()) {
            records.failed(id, dir, results);
            throw CheckpointProblems.CHECKPOINT_FAILED
                    .exception(
                            OwnerCalls.failedSummary(
                                    failed,
                                    results.size(),
                                    "save generation "
                                            + id.generation()
                                            + " (no completion marker was written)"))
                    .with("owners", results);
        }
        // Where each object lives in the owner files (the first owner that saved it, if several
        // replicas were saved).
        Map<String, CheckpointObject> objects = new TreeMap<>();
        for (OwnerCheckpoint r : results) {
            OwnerCheckpointResult answer = answers.get(r.getSegment());
            for (OwnerCheckpointObject o : answer.getSaved()) {
                String registeredChecksum = checksums.get(o.getKey());
                if (registeredChecksum == null || !registeredChecksum.equals(o.getChecksum())) {
                    throw unusableSave(
                            r.getSegment(),
                            o,
                            "with checksum "
                                    + o.getChecksum()
                                    + ", registered "
                                    + registeredChecksum);
                }
                if (!plainName(o.getFile())) {
                    throw unusableSave(
                            r.getSegment(), o, "into '" + o.getFile() + "', not a plain file name");
                }
                objects.putIfAbsent(
                        o.getKey(),
                        new CheckpointObject(
                                o.getKey(),
                                o.getSize(),
                                o.getChecksum(),
                                save.name(o.getFile()),
                                o.getOffset()));
            }
        }
        for (String key : objectKeys) {
            if (!objects.containsKey(key)) {
                throw CheckpointProblems.CHECKPOINT_FAILED
                        .exception("no owner saved object " + key)
                        .with("object", key);
            }
        }
        long bytes = objects.values().stream().mapToLong(CheckpointObject::getSize).sum();
        OffsetDateTime savedAt = time.now().atOffset(ZoneOffset.UTC);
        Generation view = g.view();
        io.weightrelay.api.common.model.SourceManifest source = manifests.apiManifest(id);
        CheckpointManifest manifest =
                new CheckpointManifest(
                        CheckpointDirectory.FORMAT,
                        id.model(),
                        id.generation(),
                        view.getTrainerStep(),
                        g.manifestDigest(),
                        source,
                        new ArrayList<>(objects.values()),
                        results,
                        bytes,
                        savedAt);
        manifest.setTrainerTopologyDigest(view.getTrainerTopologyDigest());
        manifest.setTrainerTopology(g.trainers());
        manifest.setCommittedAt(view.getCommittedAt());
        manifest.setDtypes(
                new ArrayList<>(
                                new TreeSet<>(
                                        source.getTensors().stream()
                                                .map(TensorSpec::getRolloutDtype)
                                                .map(Dtype::getValue)
                                                .toList()))
                        .stream().map(Dtype::fromValue).toList());
        directories.complete(save, manifest);
        double saveSeconds = (System.nanoTime() - started) / 1e9;
        CheckpointReport report = CheckpointRecords.report(id, dir.toString(), results);
        report.setBytes(bytes);
        report.setSaveSeconds(saveSeconds);
        records.saved(id, dir, savedAt, bytes, saveSeconds, results, null);
        log.info(
                "model {}: generation {} saved to {} by {} owner(s) in {} s, owner mean {} s,"
                        + " worst {} s",
                id.model(),
                id.generation(),
                dir,
                results.size(),
                saveSeconds,
                report.getMeanSeconds(),
                report.getWorstSeconds());
        return report;
    }

    /** A file name an owner answers: one plain name inside the save directory. */
    private static boolean plainName(String file) {
        return file != null && DirectoryFiles.staysInside(file) && !file.contains("/");
    }

    private StoredGeneration committed(GenerationId id) {
        StoredGeneration g = generations.load(id).requireNotLost();
        if (!g.committed()) {
            throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                    "generation " + id.generation() + " is " + g.state() + ", never committed");
        }
        return g;
    }

    // ---- restore -------------------------------------------------------------------------------

    /**
     * Restores the checkpoint in {@code directory}, needing nothing but the directory and live
     * segment owners.
     */
    public Generation restore(String model, Long generation, String directory) {
        Path dir = directories.confined(directory);
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
        GenerationId id = new GenerationId(model, m.getGeneration());
        // Every manifest object is in the checkpoint, with its manifest size.
        io.weightrelay.reshard.manifest.SourceManifest source =
                io.weightrelay.control.generation.ManifestMapper.toReshard(m.getManifest());
        Map<String, CheckpointObject> byKey = new HashMap<>();
        for (CheckpointObject o : m.getObjects()) {
            byKey.put(o.getKey(), o);
        }
        for (io.weightrelay.reshard.manifest.StoredFragment f : source.fragments()) {
            String key = id.objectKey(f.fragment());
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
        try (RestoreLock lock = new RestoreLock(id)) {
            // Under the lock: a generation that is stored and not lost is never restored over
            // (nothing is missing, and a restore that failed could only remove what it never
            // wrote).
            restores.requireRestorable(id);
            List<String> keysOf = new ArrayList<>(byKey.keySet());
            // Only what is gone is restored, and only that may be removed again: a key with no
            // location now can come back only through this restore (the generation is lost or
            // gone, so nothing publishes it, and no other restore of it runs meanwhile).
            Map<String, List<String>> before = store.locations(keysOf);
            List<String> absent =
                    keysOf.stream()
                            .filter(k -> before.get(k) == null || before.get(k).isEmpty())
                            .sorted()
                            .toList();
            java.util.Set<String> absentSet = new java.util.HashSet<>(absent);
            List<CheckpointObject> toRestore =
                    m.getObjects().stream().filter(o -> absentSet.contains(o.getKey())).toList();
            return restoreAbsent(id, dir, m, keysOf, absent, toRestore);
        }
    }

    /**
     * One restore of a generation at a time: a second one, which could remove what the first
     * stored, is refused (409 {@code restore-failed}). Expires on its own should control-api die.
     */
    private final class RestoreLock implements AutoCloseable {
        private final GenerationId id;
        private final String token = java.util.UUID.randomUUID().toString();

        RestoreLock(GenerationId id) {
            this.id = id;
            if (!records.lockRestore(id, token, RESTORE_LOCK_TTL)) {
                throw CheckpointProblems.RESTORE_FAILED.exception(
                        "generation "
                                + id.generation()
                                + " of model "
                                + id.model()
                                + " is being restored by another request; try again when it"
                                + " ends");
            }
        }

        @Override
        public void close() {
            records.unlockRestore(id, token);
        }
    }

    /** How long a restore's lock lasts at most (a restore that takes longer is not refused). */
    static final java.time.Duration RESTORE_LOCK_TTL = java.time.Duration.ofHours(1);

    private Generation restoreAbsent(
            GenerationId id,
            Path dir,
            CheckpointManifest m,
            List<String> keysOf,
            List<String> absent,
            List<CheckpointObject> toRestore) {
        // Owners read from the save directory by plain file names (their contract allows no '/').
        String saveDirectory = saveDirectoryOf(m, dir);
        Path ownerDirectory = saveDirectory.isEmpty() ? dir : dir.resolve(saveDirectory);
        List<CheckpointObject> owned =
                toRestore.stream()
                        .map(
                                o ->
                                        new CheckpointObject(
                                                o.getKey(),
                                                o.getSize(),
                                                o.getChecksum(),
                                                o.getFile().substring(saveDirectory.length()),
                                                o.getOffset()))
                        .toList();
        List<SegmentOwner> live =
                registry.liveSegments().stream()
                        .filter(s -> s.getAlive() && s.getAdminUrl() != null && s.getSize() > 0)
                        .sorted(Comparator.comparing(SegmentOwner::getSegment))
                        .toList();
        long started = System.nanoTime();
        List<OwnerCheckpoint> results = new ArrayList<>();
        // An owner that cannot be reached (gone since its last heartbeat) is left out and the
        // objects are spread again over the others; bytes that fail their checksum fail at once.
        for (int attempt = 0; !toRestore.isEmpty(); attempt++) {
            if (live.isEmpty()) {
                store.remove(absent);
                throw CheckpointProblems.NO_OWNERS
                        .exception(
                                "no live segment owner with an admin URL is registered to restore"
                                        + " into")
                        .with("owners", results);
            }
            Map<String, List<OwnerCheckpointObject>> plan = OwnerCalls.spread(owned, live);
            Map<String, OwnerCheckpointResult> answers =
                    new java.util.concurrent.ConcurrentHashMap<>();
            List<OwnerCheckpoint> round =
                    ownerCalls.call(
                            plan.keySet(),
                            segment ->
                                    OwnerCalls.request(id, ownerDirectory)
                                            .objects(plan.get(segment)),
                            owners::restore,
                            answers);
            results.addAll(round);
            List<OwnerCheckpoint> failed =
                    round.stream().filter(r -> r.getError() != null).toList();
            if (failed.isEmpty()) {
                break;
            }
            boolean fatal = failed.stream().anyMatch(r -> r.getError().matches("(?s)^4\\d\\d .*"));
            if (fatal || attempt >= 2) {
                // Nothing is registered; what this restore stored is removed, so no half is
                // left, and nothing else is.
                long removed = store.remove(absent);
                throw CheckpointProblems.RESTORE_FAILED
                        .exception(
                                OwnerCalls.failedSummary(
                                        failed,
                                        round.size(),
                                        "restore generation "
                                                + id.generation()
                                                + " ("
                                                + removed
                                                + " re-stored object(s) removed again)"))
                        .with("owners", results);
            }
            java.util.Set<String> out = new java.util.HashSet<>();
            failed.forEach(r -> out.add(r.getSegment()));
            log.warn(
                    "restore of generation {}: owner(s) {} failed, spreading over the others: {}",
                    id.generation(),
                    out,
                    failed.get(0).getError());
            live = live.stream().filter(s -> !out.contains(s.getSegment())).toList();
        }
        Map<String, List<String>> where = store.locations(keysOf);
        Map<String, String> registeredObjects = new HashMap<>();
        for (CheckpointObject o : m.getObjects()) {
            List<String> segments = where.get(o.getKey());
            if (segments == null || segments.isEmpty()) {
                store.remove(absent);
                throw CheckpointProblems.RESTORE_FAILED
                        .exception("object " + o.getKey() + " is not in the store after restore")
                        .with("object", o.getKey());
            }
            registeredObjects.put(
                    o.getKey(),
                    o.getSize() + "|" + o.getChecksum() + "|" + String.join(",", segments));
        }
        GenerationRestore.RestoreOutcome outcome;
        try {
            outcome =
                    restores.register(
                            new GenerationRestore.Restored(
                                    id,
                                    m.getTrainerStep(),
                                    m.getManifest(),
                                    m.getManifestDigest(),
                                    m.getTrainerTopology(),
                                    m.getTrainerTopologyDigest(),
                                    m.getCommittedAt()),
                            registeredObjects);
        } catch (RuntimeException e) {
            // Refused at registration (another history, a conflicting step, a generation that
            // came back meanwhile): what this restore stored is unregistered, remove it.
            store.remove(absent);
            throw e;
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        records.saved(
                id,
                dir,
                m.getSavedAt(),
                m.getBytes(),
                null,
                m.getOwners(),
                time.now().atOffset(ZoneOffset.UTC));
        log.info(
                "model {}: generation {} restored from {} by {} owner(s) in {} s, now {}{}",
                id.model(),
                id.generation(),
                dir,
                results.size(),
                seconds,
                outcome.generation().getState(),
                outcome.active() ? "" : " (generation " + outcome.other() + " is newer)");
        return outcome.generation();
    }

    /**
     * The save fails because {@code segment}'s owner answered that it saved {@code o} in a way the
     * checkpoint cannot use ({@code how}): one refusal, naming owner and object, for each such
     * answer.
     */
    private static RelayException unusableSave(
            String segment, OwnerCheckpointObject o, String how) {
        return CheckpointProblems.CHECKPOINT_FAILED
                .exception("owner " + segment + " saved object " + o.getKey() + " " + how)
                .with("object", o.getKey());
    }

    /**
     * The save directory every file of the checkpoint is in, with its trailing '/' ({@code ""} for
     * a checkpoint of the older layout, its files at the top).
     */
    private static String saveDirectoryOf(CheckpointManifest m, Path dir) {
        String common = null;
        for (CheckpointObject o : m.getObjects()) {
            int slash = o.getFile().indexOf('/');
            String prefix = slash < 0 ? "" : o.getFile().substring(0, slash + 1);
            if (common == null) {
                common = prefix;
            }
            if (!common.equals(prefix) || o.getFile().indexOf('/', slash + 1) >= 0) {
                throw CheckpointDirectory.misplaced(
                        dir, o, "outside its save directory '" + common + "'");
            }
        }
        return common == null ? "" : common;
    }

    /** What is remembered of the generation's last checkpoint; the generation must exist. */
    public CheckpointStatus status(GenerationId id) {
        generations.load(id);
        return records.status(id);
    }
}
