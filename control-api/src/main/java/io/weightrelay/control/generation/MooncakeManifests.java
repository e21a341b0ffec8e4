package io.weightrelay.control.generation;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.mooncake.Inexpressible;
import io.weightrelay.reshard.mooncake.WeightManifestExport;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * Committed generations as Mooncake's #3187 {@code WeightManifest} ({@link WeightManifestExport}:
 * the mapping and why object keys gain a {@code payload/} segment). Built once per generation and
 * kept in {@link ManifestCache} until it is collected: the export names its generation, so it is
 * not shared by digest.
 */
@Service
public class MooncakeManifests {
    // The parsed JSON of an export takes a few times the bytes of its text.
    private static final long BYTES_PER_CHAR = 4;

    private final GenerationQueries generations;
    private final ManifestStore manifests;
    private final JsonMapper json;
    private final ManifestCache cache;

    MooncakeManifests(
            GenerationQueries generations,
            ManifestStore manifests,
            JsonMapper json,
            ManifestCache cache) {
        this.generations = generations;
        this.manifests = manifests;
        this.json = json;
        this.cache = cache;
    }

    /**
     * One export: the JSON members in the canonical order (written back as they are, so the body is
     * the canonical JSON) and the #3187 {@code manifest_digest} of those bytes.
     */
    record Exported(Map<String, Object> body, String digest, long textChars) {}

    Exported export(GenerationId id) {
        StoredGeneration g = generations.load(id).requireNotLost();
        if (!g.committed()) {
            throw GenerationProblems.GENERATION_NOT_COMMITTED
                    .exception(
                            "generation "
                                    + id.generation()
                                    + " of "
                                    + id.model()
                                    + " is "
                                    + g.state()
                                    + ": only a committed generation has a #3187 manifest")
                    .with("generation", id.generation());
        }
        return cache.get(
                new ManifestCache.Key(
                        id.model(),
                        g.manifestDigest(),
                        id.generation(),
                        ManifestCache.Form.MOONCAKE_3187),
                () -> build(id.model(), g),
                e -> BYTES_PER_CHAR * e.textChars());
    }

    @SuppressWarnings("unchecked")
    private Exported build(String model, StoredGeneration g) {
        String text;
        try {
            text =
                    WeightManifestExport.json(
                            manifests.sourceManifest(model, g),
                            new GenerationId(model, g.id()),
                            DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(
                                    g.view().getCommittedAt()));
        } catch (Inexpressible e) {
            throw GenerationProblems.MOONCAKE_3187_INEXPRESSIBLE
                    .exception(e.getMessage())
                    .with(
                            "errors",
                            List.of(Map.of("field", e.field(), "message", "value " + e.value())));
        }
        return new Exported(
                json.readValue(text, LinkedHashMap.class),
                WeightManifestExport.digest(text),
                text.length());
    }
}
