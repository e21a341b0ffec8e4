package io.weightrelay.dataplane;

/**
 * What a segment is for. Both kinds are shared memory registered with the Transfer Engine and
 * published in the metadata store: peers READ and WRITE them one-sided (write with notify included)
 * and the owner uses them as local memory. They differ in whether the store may put objects in
 * them, the split Mooncake makes between mounting a segment (store capacity) and registering memory
 * (a transfer target only).
 */
public enum SegmentKind {
    /**
     * Store capacity ({@link Dataplane#createSegment}): {@link StoreClient#putFrom} may allocate
     * objects in it, as a preferred segment or as a fallback when the preferred ones are full.
     */
    STORE,

    /**
     * A transfer target only ({@link Dataplane#createReceiveSegment}): bytes land in it only where
     * a writer addresses them. The store never allocates in it: puts skip it, naming it as a
     * preferred segment fails with {@link SegmentNotAllocatableException}, and its owner refuses
     * allocation requests from peers (answered as "full", so a client that predates the kind skips
     * it too). For buffers whose bytes belong to someone else, such as a rollout worker's receive
     * buffer or a loader's staging: an object stored there would be overwritten, or overwrite them.
     */
    RECEIVE
}
