package io.weightrelay.dataplane;

/**
 * Memory of this process registered with its engine: the local side of a transfer, the source of a
 * put and the destination of a ranged get. Either an own {@link Segment} or a {@link
 * RegisteredBuffer}.
 */
public sealed interface LocalMemory permits Segment, RegisteredBuffer {
    /** Size in bytes. */
    long size();

    /** A short name for messages (segment name or buffer description). */
    String describe();
}
