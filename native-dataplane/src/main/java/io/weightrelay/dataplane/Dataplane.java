package io.weightrelay.dataplane;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A process's data plane: its Transfer Engine (node label, tcp server, byte counters), its
 * segments, its registered buffers and the store client, all sharing one metadata connection.
 *
 * <pre>{@code
 * DataplaneConfig config = DataplaneConfig.builder("node-a").keyPrefix("wr:dp:").build();
 * try (Dataplane dp = Dataplane.open(config);
 *         Segment segment = dp.createSegment("publisher-node-a", 8L << 30)) {
 *     dp.store().putFrom(key, segment, offset, size, ReplicateConfig.preferLocal(segment.name()));
 * }
 * }</pre>
 *
 * <p>Ownership: the caller owns the dataplane and closes it once; closing it closes every segment
 * and registered buffer it created (unpublishing and unlinking segments), stops the engine and the
 * metadata connection. {@link #close()} is idempotent. Thread safe: share one instance per process.
 */
public sealed interface Dataplane extends AutoCloseable
        permits BuiltinDataplane, MooncakeDataplane {
    /**
     * Opens the data plane {@code config} describes, on the engine {@link DataplaneConfig#engine()}
     * names: the built-in one starts its engine (its tcp server listens on {@code
     * tcpBindHost:tcpPort}) and connects to the metadata store; the Mooncake one starts its
     * Mooncake agent ({@link DataplaneConfig#mooncake()}) and connects to the metadata store.
     */
    static Dataplane open(DataplaneConfig config) {
        return switch (config.engine()) {
            case BUILTIN -> BuiltinDataplane.open(config);
            case MOONCAKE -> MooncakeDataplane.open(config);
        };
    }

    /**
     * Removes the segment files in {@code shmDir} whose owner process is gone, whatever key prefix
     * or run made them, and logs each (path, bytes). A segment file's owner holds an exclusive
     * {@code flock} on its sidecar {@code <segment file>.owner} while it lives, which the kernel
     * releases however the process ends (SIGKILL, the OOM killer): so a file is removed only when
     * its owner provably died, never one of a live process (of this host, another container or
     * another network namespace sharing the directory). Files without a valid sidecar naming them
     * (staging files, files of an older version, files some other program made, other users') are
     * never touched; a segment file itself holds exactly the segment's bytes. An empty unlocked
     * sidecar is the trace of a creator killed before it wrote its record: it goes, with its
     * segment file if that is empty too (reported with 0 bytes). {@link #open} calls it, so a
     * service restarted after {@code kill -9} and the next lab on the host get the memory back;
     * safe to call at any time from any process. The Mooncake engine's files ({@code
     * wr-mc-<instance>-...}) go the same way when the lock of their data plane's owner file ({@code
     * wr-mc-<instance>.lock}, held by its JVM) is free ({@code MooncakeOwnerLock}).
     *
     * @return what was removed, empty when nothing was orphaned
     */
    static List<ReclaimedSegmentFile> reclaimOrphanedSegmentFiles(Path shmDir) {
        List<ReclaimedSegmentFile> reclaimed =
                new java.util.ArrayList<>(BuiltinDataplane.reclaimOrphanedSegmentFiles(shmDir));
        reclaimed.addAll(MooncakeOwnerLock.reclaimOrphans(shmDir));
        return List.copyOf(reclaimed);
    }

    /**
     * The file name (inside the shm directory) of segment {@code name} under key prefix {@code
     * prefix}; its sidecar is this name and {@code .owner}. A killed owner leaves both behind until
     * a data plane opens on the host ({@link #reclaimOrphanedSegmentFiles}).
     */
    static String shmFileName(String prefix, String name) {
        return BuiltinDataplane.shmFileName(prefix, name);
    }

    DataplaneConfig config();

    String nodeLabel();

    /**
     * The identity of this host that segment descriptors carry: {@link DataplaneConfig#hostId()},
     * or derived from the machine id and the shm directory (see {@code HostIdentity}).
     */
    String hostId();

    /** The port the engine's tcp server listens on. */
    int tcpPort();

    /** The Transfer Engine view. */
    TransferEngine engine();

    /** The store client view. */
    StoreClient store();

    /** A snapshot of the engine's byte counters. */
    Counters counters();

    /**
     * The transport endpoint the store reports for replicas in this process's own store capacity,
     * where the engine names replicas by endpoint rather than by segment: on Mooncake, what {@link
     * StoreClient#locate} answers for an object stored in this agent's mounted segment (the
     * publisher's "is it local" question asked from another process). Empty on the built-in engine,
     * whose replicas are named by segment ({@link StoreClient#locations}), and for a reading
     * client.
     */
    default Optional<String> storeEndpoint() {
        return Optional.empty();
    }

    /**
     * Checks that the store capacity this process owns still holds what was stored in it, and says,
     * once each, why it does not since the last call. On Mooncake the capacity is the segment its
     * agent mounted, in the agent's memory: an agent that died (killed, crashed) took every object
     * in that segment along, and the master drops the segment. The agent is asked (one command; a
     * dead one is started again, mounting a new, empty segment), and each agent death since the
     * last call is answered, naming the dead agent and its successor: the caller must report what
     * it had stored as lost. Empty on the built-in engine, whose segments live and die with this
     * process, and on a reading client, which owns no capacity.
     *
     * @throws DataplaneException when the engine cannot be reached or started again (asked again on
     *     the next call)
     */
    default List<String> storeCapacityLost() {
        return List.of();
    }

    /**
     * Creates a segment of {@code size} bytes that is store capacity ({@link SegmentKind#STORE}):
     * backed by a new file {@code <shmDir>/wr-<prefix>-<name>} (a file left there, by a crashed
     * owner say, is unlinked first: peers still mapping it keep their pages), pre-faulted,
     * registered with the engine and published. Peers read and write it one-sided, and {@link
     * StoreClient#putFrom} may allocate objects in it, also when it is not a preferred segment (the
     * fallback when preferred segments are full). Creation costs about 0.5 s per GiB on first use
     * of the memory; reuse segments across generations.
     *
     * <p>Memory whose bytes belong to someone else (receive buffers, staging) must use {@link
     * #createReceiveSegment} instead: a put may fill any store segment.
     *
     * @param name unique per key prefix: letters, digits, '.', '_', '-'
     */
    Segment createSegment(String name, long size);

    /**
     * Creates a segment of {@code size} bytes that is a transfer target only ({@link
     * SegmentKind#RECEIVE}): shared memory like {@link #createSegment} (same file naming,
     * pre-faulted, registered, published, readable and writable one-sided by peers over both
     * transports, write with notify included, usable as local memory), whose descriptor marks it
     * not allocatable. The store never puts an object in it: puts skip it when falling back, naming
     * it in {@link ReplicateConfig#preferredSegments()} fails with {@link
     * SegmentNotAllocatableException}, and this engine refuses allocation requests into it from
     * peers. Mooncake's "register memory", as opposed to "mount a segment". Use it for rollout
     * workers' receive buffers and read staging.
     *
     * @param name unique per key prefix (shared with store segments): letters, digits, '.', '_',
     *     '-'
     */
    Segment createReceiveSegment(String name, long size);

    /**
     * Gives a {@linkplain #createReceiveSegment receive segment} of this data plane a new
     * incarnation and publishes its descriptor again, keeping its file, mapping and bytes: what a
     * new registration of the same buffers (an engine that restarted and declared them again) takes
     * over instead of destroying the segment and paying for fresh pages. From then on the segment
     * is fenced as a segment made again would be: a transfer addressed with a descriptor read
     * before ({@link StaleSegmentException}) is refused over tcp, from engines that map its file
     * and from this one, and a tcp write already accepted has landed when this returns. The bytes
     * stay as the earlier incarnation left them: the caller must not serve them before it wrote and
     * verified them again (a loader's next update does).
     *
     * @throws DataplaneException when it cannot be renewed (not a live receive segment of this data
     *     plane, or the incarnation could not be published); the caller then makes the segment anew
     * @throws MooncakeUnsupportedException on the Mooncake engine, whose registered memory has no
     *     incarnation of ours to renew
     */
    void renewReceiveSegment(Segment segment);

    /**
     * Publishes {@code name} as {@code size} bytes of memory that another process registered with a
     * Mooncake Transfer Engine of its own ({@code buffer}: a rollout worker inside vLLM or SGLang
     * that runs no weight-relay agent): peers' one-sided writes and reads addressed to {@code name}
     * go to that engine, as to a {@linkplain #createReceiveSegment receive segment}, and a write
     * with notify notifies this data plane's engine once the bytes landed there. This process maps
     * none of the bytes; it reads them back like any peer, into {@link ForeignSegment#readBack()}
     * (a receive segment {@code <name>.readback} of the same size). The name is this data plane's
     * as a receive segment's would be (refused while another live engine holds it, {@link
     * #reannounceSegments republished}, taken over once this process is gone).
     *
     * @throws ForeignSegmentUnsupportedException on the built-in engine, which cannot reach another
     *     Transfer Engine's memory
     */
    ForeignSegment attachForeignSegment(String name, long size, ForeignBuffer buffer);

    /**
     * Publishes again the descriptor of every segment of this dataplane whose descriptor is gone
     * from the metadata store, as after Redis restarted without its data: peers find the segment
     * again (a new generation's objects in it are readable, receive buffers writable). A name whose
     * descriptor is there (this engine's, or another's that took it over) is left alone. Cheap when
     * nothing is missing (one read per segment); the services call it with their heartbeats.
     *
     * @return the names published again, empty when none was missing
     * @throws MetadataException when Redis cannot be reached
     */
    List<String> reannounceSegments();

    /** A segment this dataplane created and has not closed. */
    Optional<Segment> segment(String name);

    /**
     * Registers a direct buffer as local memory of this engine.
     *
     * @throws IllegalArgumentException if the buffer is not direct or empty
     */
    RegisteredBuffer registerBuffer(ByteBuffer direct);

    void close();
}
