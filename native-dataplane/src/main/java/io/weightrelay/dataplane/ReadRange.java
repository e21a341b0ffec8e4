package io.weightrelay.dataplane;

import java.util.Objects;

/**
 * One byte range of a stored object and where it lands.
 *
 * @param objectOffset first byte in the object
 * @param length bytes to read; the range must lie inside the object (a range that crosses the
 *     object's end fails with {@link DataplaneError#OUT_OF_BOUNDS}, never a short read)
 * @param destination registered local memory
 * @param destinationOffset where the first byte lands in {@code destination}
 */
public record ReadRange(
        long objectOffset, long length, LocalMemory destination, long destinationOffset) {

    public ReadRange {
        Objects.requireNonNull(destination, "destination");
    }
}
