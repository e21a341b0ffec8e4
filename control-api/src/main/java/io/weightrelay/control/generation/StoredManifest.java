package io.weightrelay.control.generation;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.common.model.RolloutQuantization;
import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.TensorSpec;
import io.weightrelay.control.redis.StoredJson;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;

/**
 * A source manifest as stored once per digest (the trainer's tensors with the FP8 rule applied, and
 * the rule): what checkpoints save and the manifest view serves. Field names are the contract's
 * {@code SourceManifest}'s; dtypes are their wire names ({@code bf16}); format 0, written before
 * formats existed, is that class's JSON.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record StoredManifest(
        @JsonSetter(nulls = Nulls.AS_EMPTY) int format,
        String model,
        List<Tensor> tensors,
        Long maxFragmentBytes,
        Quantization rolloutQuantization)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    public StoredManifest {
        tensors = List.copyOf(tensors);
    }

    /** A tensor as the trainer described it ({@code splitDim}, {@code expert}: absent, -1). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Tensor(
            String name,
            List<Long> shape,
            String trainerDtype,
            String rolloutDtype,
            Integer splitDim,
            Integer expert) {
        public Tensor {
            shape = List.copyOf(shape);
        }
    }

    /** Which tensors are stored as block-scaled FP8: the scheme and the include/exclude globs. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Quantization(String scheme, List<String> include, List<String> exclude) {}

    static StoredManifest of(SourceManifest api) {
        List<Tensor> tensors = new ArrayList<>(api.getTensors().size());
        for (TensorSpec t : api.getTensors()) {
            tensors.add(
                    new Tensor(
                            t.getName(),
                            t.getShape(),
                            t.getTrainerDtype().getValue(),
                            t.getRolloutDtype().getValue(),
                            t.getSplitDim(),
                            t.getExpert()));
        }
        RolloutQuantization q = api.getRolloutQuantization();
        return new StoredManifest(
                FORMAT,
                api.getModel(),
                tensors,
                api.getMaxFragmentBytes(),
                q == null
                        ? null
                        : new Quantization(
                                q.getScheme().getValue(), q.getInclude(), q.getExclude()));
    }

    public SourceManifest toApi() {
        List<TensorSpec> out = new ArrayList<>(tensors.size());
        for (Tensor t : tensors) {
            TensorSpec spec =
                    new TensorSpec(
                            t.name(),
                            new ArrayList<>(t.shape()),
                            Dtype.fromValue(t.trainerDtype()),
                            Dtype.fromValue(t.rolloutDtype()));
            spec.setSplitDim(t.splitDim());
            spec.setExpert(t.expert());
            out.add(spec);
        }
        SourceManifest api = new SourceManifest(model, out);
        api.setMaxFragmentBytes(maxFragmentBytes);
        if (rolloutQuantization != null) {
            RolloutQuantization q =
                    new RolloutQuantization(
                            RolloutQuantization.SchemeEnum.fromValue(rolloutQuantization.scheme()));
            if (rolloutQuantization.include() != null) {
                q.setInclude(new ArrayList<>(rolloutQuantization.include()));
            }
            if (rolloutQuantization.exclude() != null) {
                q.setExclude(new ArrayList<>(rolloutQuantization.exclude()));
            }
            api.setRolloutQuantization(q);
        }
        return api;
    }

    /** The manifest stored under {@code key}. */
    public static StoredManifest read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredManifest.class, FORMAT);
    }
}
