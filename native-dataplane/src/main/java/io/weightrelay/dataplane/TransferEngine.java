package io.weightrelay.dataplane;

import java.time.Duration;
import java.util.List;

/**
 * Batched, asynchronous one-sided READ and WRITE between this process's registered memory and any
 * segment, addressed by (segment name, offset). The transport follows the node labels: the local
 * transport (map the owner's shm file, copy) between engines of the same label, tcp (the owner's
 * engine server moves the bytes) otherwise. The target application stays passive; a write may carry
 * a notify that the target waits on with {@link #awaitNotify}.
 *
 * <p>Ownership: a view owned by its {@link Dataplane}; closing the dataplane closes it. Thread
 * safe: any number of threads may submit and wait concurrently.
 */
public sealed interface TransferEngine permits BuiltinTransferEngine, MooncakeTransferEngine {
    /** Node label of this engine. */
    String nodeLabel();

    /**
     * Submits the requests as one batch. Invalid requests (unknown segment, out of bounds,
     * unregistered local memory) fail individually; the others run.
     */
    TransferBatch submit(List<TransferRequest> requests);

    /**
     * Like {@link #submit}, and the engine takes the CRC32C of every task's bytes as it moves them
     * (fused with the copy or the receive, while the bytes are in cache): read with {@link
     * TransferBatch#crc32c} once a task completed. Costs a fraction of a second pass over the
     * bytes.
     */
    TransferBatch submitChecksummed(List<TransferRequest> requests);

    /**
     * Like {@link #submit}, and once every task has succeeded, the owner engine of each distinct
     * WRITE target segment increments its counter {@code notifyName} (after the bytes landed).
     */
    TransferBatch submitWithNotify(List<TransferRequest> requests, String notifyName);

    /**
     * {@link #submitWithNotify} and {@link #submitChecksummed} in one: the CRC32C of every task's
     * bytes taken as they move (for a write, of the bytes as sent), the notify after they landed.
     */
    TransferBatch submitChecksummedWithNotify(List<TransferRequest> requests, String notifyName);

    /** Submits, waits for full success (or throws the first failure) and releases the batch. */
    void transfer(List<TransferRequest> requests, Duration timeout);

    /**
     * Makes this engine count notifies named {@code name}: notifies for a name the target never
     * registered are dropped (nothing is created; the writer's batch still succeeds, it cannot know
     * who listens), so peers cannot make an engine keep counters it did not ask for. Register
     * before the writers may send (before the barrier that lets them start), or their notifies are
     * lost and the wait times out; registering again keeps the count.
     *
     * @return the counter's current value (0 when new), the baseline to wait from
     */
    long registerNotify(String name);

    /**
     * Drops the counter {@code name} once its update ended (applied or aborted); later notifies for
     * it are dropped and waiters return. Unknown names are ignored.
     */
    void unregisterNotify(String name);

    /**
     * Current value of this engine's notify counter {@code name}.
     *
     * @throws DataplaneException with {@link DataplaneError#NOT_FOUND} if it is not registered
     */
    long notifyCount(String name);

    /**
     * Blocks until this engine's notify counter {@code name} reaches {@code atLeast}.
     *
     * @return the counter value
     * @throws NotifyTimeoutException if it did not within {@code timeout}
     */
    long awaitNotify(String name, long atLeast, Duration timeout);

    /**
     * Checks that {@code segment}'s owner answers now: a tcp owner must accept (or still hold) an
     * authenticated control connection within the connect timeout; a segment read through a file
     * mapping or owned here needs no owner, only its file still being the segment's (a mapping
     * whose file the owner has since created afresh is dropped and the current file mapped). Meant
     * for a prepare step, before anything is touched.
     *
     * @throws UnknownSegmentException if no descriptor names the segment, or its file is gone
     * @throws PeerGoneException if its owner does not answer
     * @throws PermissionDeniedException if it answers but refuses this engine's proof
     */
    void probe(String segment);

    /**
     * Re-reads the descriptor of every segment this engine has resolved and forgets those whose
     * owner changed (restarted with a new engine, port or file) or left, and those of this node
     * whose file the owner removed since they were mapped (it created the segment afresh under the
     * same descriptor, as a loader does for its receive segments when its engine registers again),
     * so the next transfer resolves them afresh. Cheap: the cached segments' descriptors are read
     * in one pipelined round trip, and a same-node mapping is checked with one {@code fstat}. Call
     * it before a unit of work that follows a restart or a registration elsewhere (a loader does at
     * every prepare); reads through {@link StoreClient} do it by themselves when the segments epoch
     * moved.
     *
     * @return how many cached segments were forgotten
     */
    int revalidate();

    /**
     * Maps every segment of this engine's node (its label and host) that it has not resolved yet
     * and does not own, so the first transfer into or out of one finds its mapping made: mapping a
     * same-node segment populates its pages, which took a fifth of the CPU of a loader's first
     * prepare. Reads the segment names and their descriptors only when the segments epoch moved
     * since the last call (one Redis read otherwise). Segments of other nodes are left alone (a
     * transfer connects to those when it needs them). A segment that cannot be mapped now (its file
     * is gone, its descriptor refused) is skipped and looked at again at the next epoch; the
     * transfer that needs it resolves it afresh and fails naming it.
     *
     * @return how many segments this call mapped
     */
    int mapNodeSegments();
}
