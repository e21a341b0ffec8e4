package io.weightrelay.publisher.publish;

import io.weightrelay.publisher.convert.ElementType;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the publisher needs of a generation's manifest: per tensor its shape and dtypes and the
 * stored fragments as element ranges (fragments split tensors along dimension 0, so each is one
 * contiguous run of elements).
 */
public record GenerationLayout(String model, long generation, Map<String, Tensor> tensors) {

    public GenerationLayout {
        tensors = Map.copyOf(tensors);
    }

    public Optional<Tensor> tensor(String name) {
        return Optional.ofNullable(tensors.get(name));
    }

    /** A tensor; fragments ordered by first element, tiling it. */
    public record Tensor(
            String name,
            List<Long> shape,
            ElementType trainerType,
            ElementType rolloutType,
            long elements,
            List<Fragment> fragments) {
        public Tensor {
            shape = List.copyOf(shape);
            fragments = List.copyOf(fragments);
        }
    }

    /** One stored object: elements [firstElement, firstElement + elements) of its tensor. */
    public record Fragment(String key, long firstElement, long elements) {}
}
