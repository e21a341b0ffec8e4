package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointManifest;
import io.weightrelay.api.control.model.CheckpointObject;
import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.Dtype;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.TensorSpec;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.generation.GenerationProblems;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.ManifestStore;
import io.weightrelay.control.generation.StoredGeneration;
import io.weightrelay.control.store.ObjectStore;
import java.nio.file.Path;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * Saves a committed generation into a checkpoint directory ({@link CheckpointDirectory}) through
 * the segment owners that hold it. Which owners hold it comes from the store's own object
 * directory, so a save calls exactly those owners and no GPU process.
 */
@Service
public class CheckpointSave {

    private static final Logger log = LoggerFactory.getLogger(CheckpointSave.class);

    private final GenerationQueries generations;
    private final ManifestStore manifests;
    private final ObjectStore store;
    private final OwnerCalls calls;
    private final CheckpointDirectory directories;
    private final CheckpointRecords records;
    private final Clock clock;

    CheckpointSave(
            GenerationQueries generations,
            ManifestStore manifests,
            ObjectStore store,
            OwnerCalls calls,
            CheckpointDirectory directories,
            CheckpointRecords records,
            Clock clock) {
        this.generations = generations;
        this.manifests = manifests;
        this.store = store;
        this.calls = calls;
        this.directories = directories;
        this.records = records;
        this.clock = clock;
    }

    public CheckpointReport save(String model, long generation, String directory) {
        long started = System.nanoTime();
        Path dir = CheckpointDirectory.absolute(directory);
        StoredGeneration g = committed(model, generation);
        List<String> objectKeys = manifests.objectKeys(model, generation, g.manifestDigest());
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
                                    + generation
                                    + " are not in the store; a checkpoint would be unusable")
                    .with("objects", missing.subList(0, Math.min(20, missing.size())));
        }
        // Each owner gets the published checksums of what it holds, and saves only matching bytes.
        Map<String, String> checksums = generations.registeredChecksums(model, generation);
        Map<String, Map<String, String>> checksumsPerSegment = new TreeMap<>();
        checksums.forEach(
                (key, checksum) -> {
                    for (String segment : locations.getOrDefault(key, List.of())) {
                        checksumsPerSegment
                                .computeIfAbsent(segment, x -> new TreeMap<>())
                                .put(key, checksum);
                    }
                });
        // A save into a directory that held a checkpoint makes it unusable first: no marker
        // vouches for a mix of old and new files.
        directories.clear(dir);
        Map<String, OwnerCheckpointResult> answers = new java.util.concurrent.ConcurrentHashMap<>();
        List<OwnerCheckpoint> results =
                calls.save(
                        expectedPerSegment.keySet(),
                        segment ->
                                new OwnerCheckpointRequest()
                                        .model(model)
                                        .generation(generation)
                                        .directory(dir.toString())
                                        .checksums(
                                                checksumsPerSegment.getOrDefault(
                                                        segment, Map.of())),
                        answers);
        for (OwnerCheckpoint r : results) {
            long expected = expectedPerSegment.getOrDefault(r.getSegment(), 0L);
            if (r.getError() == null && r.getObjects() != expected) {
                r.setError("saved " + r.getObjects() + " objects, the store says " + expected);
            }
        }
        List<OwnerCheckpoint> failed = results.stream().filter(r -> r.getError() != null).toList();
        if (!failed.isEmpty()) {
            records.failed(model, generation, dir, results);
            throw CheckpointProblems.CHECKPOINT_FAILED
                    .exception(
                            OwnerCalls.failedMessage(
                                    failed,
                                    results.size(),
                                    "save generation "
                                            + generation
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
                    throw CheckpointProblems.CHECKPOINT_FAILED
                            .exception(
                                    "owner "
                                            + r.getSegment()
                                            + " saved object "
                                            + o.getKey()
                                            + " with checksum "
                                            + o.getChecksum()
                                            + ", registered "
                                            + registeredChecksum)
                            .with("object", o.getKey());
                }
                objects.putIfAbsent(
                        o.getKey(),
                        new CheckpointObject(
                                o.getKey(),
                                o.getSize(),
                                o.getChecksum(),
                                o.getFile(),
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
        OffsetDateTime savedAt = clock.instant().atOffset(ZoneOffset.UTC);
        Generation view = g.view();
        io.weightrelay.api.control.model.SourceManifest source =
                manifests.apiManifest(model, generation);
        CheckpointManifest manifest =
                new CheckpointManifest(
                        CheckpointDirectory.FORMAT,
                        model,
                        generation,
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
        directories.complete(dir, manifest);
        double saveSeconds = (System.nanoTime() - started) / 1e9;
        CheckpointReport report =
                CheckpointRecords.report(model, generation, dir.toString(), results);
        report.setBytes(bytes);
        report.setSaveSeconds(saveSeconds);
        records.saved(model, generation, dir, savedAt, bytes, saveSeconds, results, null);
        log.info(
                "model {}: generation {} saved to {} by {} owner(s) in {} s, owner mean {} s,"
                        + " worst {} s",
                model,
                generation,
                dir,
                results.size(),
                saveSeconds,
                report.getMeanSeconds(),
                report.getWorstSeconds());
        return report;
    }

    private StoredGeneration committed(String model, long generation) {
        StoredGeneration g = generations.load(model, generation).requireNotLost();
        if (!g.committed()) {
            throw GenerationProblems.GENERATION_NOT_COMMITTED.exception(
                    "generation " + generation + " is " + g.state() + ", never committed");
        }
        return g;
    }
}
