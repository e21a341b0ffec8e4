package io.weightrelay.reshard.mooncake;

import io.weightrelay.reshard.codec.Digests;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A committed generation as Mooncake's #3187 {@code WeightManifest}, in the canonical JSON its
 * {@code to_json} writes (keys sorted, no blanks, non-ASCII as is), so {@code
 * WeightManifest.from_json} accepts it and its {@code manifest_digest} is the SHA-256 of exactly
 * these bytes ({@link #digest}).
 *
 * <p>The mapping: {@code resource_id} is the model, {@code revision} our manifest digest (the
 * content, generation-free), {@code weight_generation} the generation, {@code group_id} {@code
 * {model}/{generation}} and {@code manifest_key} {@code {group_id}/manifest}; each tensor is a
 * descriptor in its rollout dtype (safetensors name, {@code itemsize}) with no parallel axes (a
 * stored manifest says how bytes are stored, not how ranks hold them), {@code layout_fingerprint}
 * {@code row-major}; each stored fragment keeps its id, box and size, one object each at {@code
 * object_offset} 0. #3187 requires object keys under {@code {group_id}/payload/}, ours are {@code
 * {model}/{generation}/{fragment}}: the exported {@code object_key} is {@code
 * {model}/{generation}/payload/{fragment}}, and the store key is that name without its {@code
 * payload/} segment. {@code created_at} is the commit time, so two exports of one generation are
 * the same bytes.
 */
public final class WeightManifestExport {
    /** The #3187 {@code namespace} of every manifest we export. */
    public static final String NAMESPACE = "weight-relay";

    /**
     * The #3187 {@code layout_fingerprint} of our tensors: dense row-major in the rollout dtype.
     */
    public static final String LAYOUT = "row-major";

    private WeightManifestExport() {}

    /** The #3187 {@code group_id} of a generation. */
    public static String groupId(GenerationId generation) {
        return generation.path();
    }

    /** The #3187 {@code object_key} of a stored fragment. */
    public static String objectKey(GenerationId generation, String fragment) {
        return groupId(generation) + "/payload/" + fragment;
    }

    /**
     * The canonical #3187 JSON of {@code manifest} as {@code generation}, committed at {@code
     * createdAt} (ISO-8601).
     *
     * @throws Inexpressible for a scalar tensor or an empty box, which #3187 cannot hold
     */
    public static String json(SourceManifest manifest, GenerationId generation, String createdAt) {
        String group = groupId(generation);
        String model = generation.model();
        int t0 = 0;
        for (TensorSpec t : manifest.tensors()) {
            int i = t0++;
            if (t.shape().rank() == 0 || t.shape().numel() == 0) {
                throw new Inexpressible(
                        "tensors[" + i + "].global_shape",
                        dims(t.shape()),
                        "tensor "
                                + t.name()
                                + ": #3187 tensors have at least one dimension and every extent"
                                + " at least 1");
            }
        }
        StringBuilder out = new StringBuilder(128 + 160 * manifest.fragments().size());
        out.append("{\"created_at\":");
        string(out, createdAt);
        out.append(",\"fragments\":[");
        int i = 0;
        for (StoredFragment f : manifest.fragments()) {
            if (f.shape().numel() == 0 || f.shape().rank() == 0) {
                throw new Inexpressible(
                        "fragments[" + i + "].local_shape",
                        dims(f.shape()),
                        "fragment "
                                + f.fragment()
                                + " of "
                                + f.tensor()
                                + ": #3187 boxes have at least one element along at least one"
                                + " dimension");
            }
            out.append(i++ == 0 ? "{" : ",{");
            out.append("\"aliases\":[],\"fragment_id\":");
            string(out, f.fragment());
            out.append(",\"global_offset\":").append(dims(f.offset()));
            out.append(",\"local_shape\":").append(dims(f.shape()));
            out.append(",\"nbytes\":").append(f.bytes());
            out.append(",\"object_key\":");
            string(out, objectKey(generation, f.fragment()));
            out.append(",\"object_offset\":0,\"tensor_id\":");
            string(out, f.tensor());
            out.append('}');
        }
        out.append("],\"group_id\":");
        string(out, group);
        out.append(",\"manifest_key\":");
        string(out, group + "/manifest");
        out.append(",\"namespace\":");
        string(out, NAMESPACE);
        out.append(",\"resource_id\":");
        string(out, model);
        out.append(",\"resource_kind\":\"model_weight\",\"revision\":");
        string(out, manifest.digest());
        out.append(",\"tensors\":[");
        i = 0;
        for (TensorSpec t : manifest.tensors()) {
            out.append(i++ == 0 ? "{" : ",{");
            out.append("\"dtype\":");
            string(out, t.rolloutDtype().safetensorsName());
            out.append(",\"expert_id\":null,\"global_shape\":").append(dims(t.shape()));
            out.append(",\"itemsize\":").append(t.rolloutDtype().bytes());
            out.append(",\"layer_id\":null,\"layout_fingerprint\":");
            string(out, LAYOUT);
            out.append(",\"parallel_axes\":[],\"shard_dims\":[],\"tensor_id\":");
            string(out, t.name());
            out.append('}');
        }
        out.append("],\"weight_generation\":").append(generation.generation()).append('}');
        return out.toString();
    }

    /** The #3187 {@code manifest_digest} of an exported manifest: SHA-256 of its bytes, hex. */
    public static String digest(String json) {
        return Digests.sha256Hex(json.getBytes(StandardCharsets.UTF_8));
    }

    private static String dims(Shape shape) {
        return Arrays.toString(shape.dims()).replace(" ", "");
    }

    /** A JSON string as Python's {@code json.dumps(..., ensure_ascii=False)} writes it. */
    private static void string(StringBuilder out, String value) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
