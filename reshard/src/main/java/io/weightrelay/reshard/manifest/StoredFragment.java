package io.weightrelay.reshard.manifest;

import java.util.Objects;

/**
 * One stored object: an N-D box of one tensor, stored contiguously in row-major order of the box in
 * the tensor's rollout dtype.
 *
 * @param fragment fragment id; the store key is {@code {model}/{generation}/{fragment}}
 * @param tensor name of the tensor the box belongs to
 * @param offset box origin in tensor coordinates
 * @param shape box extent
 * @param bytes object size, which must equal {@code shape.numel() * rolloutDtype.bytes()}
 */
public record StoredFragment(
        String fragment, String tensor, Shape offset, Shape shape, long bytes) {
    public StoredFragment {
        Objects.requireNonNull(fragment, "fragment");
        Objects.requireNonNull(tensor, "tensor");
        Objects.requireNonNull(offset, "offset");
        Objects.requireNonNull(shape, "shape");
        if (fragment.isEmpty() || fragment.contains("/")) {
            throw new IllegalArgumentException(
                    "fragment id must be non-empty without '/': " + fragment);
        }
        if (offset.rank() != shape.rank()) {
            throw new IllegalArgumentException(
                    "fragment " + fragment + ": offset and shape ranks differ");
        }
        if (bytes < 0) {
            throw new IllegalArgumentException("fragment " + fragment + ": negative size");
        }
    }
}
