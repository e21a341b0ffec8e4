package io.weightrelay.dataplane;

/**
 * What a {@link Segment} and a {@link RegisteredBuffer} ask of the engine that made them: the
 * engine-side half of their lifecycle. Each engine's {@link Dataplane} implements it.
 */
interface LocalMemoryOwner {
    String nodeLabel();

    /** The Transfer Engine the memory is registered with. */
    TransferEngine engine();

    /** Bytes of own store segment {@code segment} not allocated to stored objects. */
    long freeBytes(String segment);

    /** Unpublishes, unregisters and removes {@code segment} (its close). */
    void destroySegment(Segment segment);

    /** Unregisters {@code buffer} (its close). */
    void unregisterBuffer(RegisteredBuffer buffer);
}
