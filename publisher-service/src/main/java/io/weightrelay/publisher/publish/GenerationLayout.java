package io.weightrelay.publisher.publish;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.GenerationId;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the publisher needs of a generation's manifest: per tensor its shape and dtypes and the
 * stored fragments as element ranges (fragments split tensors along dimension 0, so each is one
 * contiguous run of elements), and which fragments are block-FP8 weights with their scale objects.
 */
public record GenerationLayout(GenerationId id, Map<String, Tensor> tensors) {

    public GenerationLayout {
        tensors = Map.copyOf(tensors);
    }

    public String model() {
        return id.model();
    }

    public long generation() {
        return id.generation();
    }

    public Optional<Tensor> tensor(String name) {
        return Optional.ofNullable(tensors.get(name));
    }

    /**
     * A tensor; fragments ordered by first element, tiling it. {@code scalesOf} names the weight
     * when this is a block-FP8 scale tensor, which the publisher computes and no rank sends.
     */
    public record Tensor(
            String name,
            List<Long> shape,
            DType trainerType,
            DType rolloutType,
            long elements,
            List<Fragment> fragments,
            String scalesOf) {
        public Tensor {
            shape = List.copyOf(shape);
            fragments = List.copyOf(fragments);
        }
    }

    /**
     * One stored object: elements [firstElement, firstElement + elements) of its tensor; for a
     * block-FP8 weight also the object its scales go to ({@code scaleKey}, {@code scaleBytes};
     * otherwise null and 0).
     */
    public record Fragment(
            String key, long firstElement, long elements, String scaleKey, long scaleBytes) {
        public Fragment(String key, long firstElement, long elements) {
            this(key, firstElement, elements, null, 0);
        }
    }
}
