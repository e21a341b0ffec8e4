package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.checksum.Crc32c;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What one apply wrote into buffers, as its data plane summed the bytes while moving them (every
 * push, node fan-out and relay is submitted checksummed): the digests {@link LandedProof} compares
 * with what each receiver holds. No byte of staging or of a buffer is read a second time for them.
 *
 * <p>A destination write (a plan write into one worker, or a delegate's copy of a received write to
 * one peer) is {@link #open opened} once; each transfer that carries a piece of it is {@link #tag
 * tagged} in destination order; once the transfer completed, the data plane's CRC32C of it is
 * {@link #add added}. {@link #digests} combines each write's pieces in order ({@link
 * Crc32c#combine}) into the checksum of its bytes, bound to where they land. Thread safe.
 *
 * <p>A transfer whose source bytes another transfer of the same submission already carries (the
 * same staging range, sent to every instance with the same shard layout, or to a delegate's node
 * peers) need not be summed again: it is submitted unsummed and {@link #twin twinned} with the
 * summed one once it completed, and counts with that one's CRC32C. Its bytes are still proven where
 * they land: a receiver's digest holds only if what landed equals what the summed transfer read.
 */
final class SentTally {

    /** A piece of a destination write carried by one transfer, in destination order. */
    record Tag(int write, long order) {}

    /** Where a write lands, who sends it and how many bytes it has. */
    private record Write(
            String sender,
            String instance,
            String worker,
            String buffer,
            long dstOffset,
            long bytes) {}

    private record Piece(int write, long order, int crc, long length) {}

    /** A completed unsummed transfer, and the summed one that carried the same source bytes. */
    private record Twin(int write, long order, long of, long length) {}

    private final List<Write> writes = new ArrayList<>();
    private final AtomicLong order = new AtomicLong();
    private final ConcurrentLinkedQueue<Piece> pieces = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Twin> twins = new ConcurrentLinkedQueue<>();
    private final AtomicLong summedBytes = new AtomicLong();
    private final AtomicLong twinnedBytes = new AtomicLong();

    /**
     * A write of {@code bytes} bytes by {@code sender} into {@code buffer} of {@code worker} (of
     * {@code instance}), its first byte at {@code dstOffset}.
     *
     * @return its handle for {@link #tag}
     */
    synchronized int open(
            String sender,
            String instance,
            String worker,
            String buffer,
            long dstOffset,
            long bytes) {
        writes.add(new Write(sender, instance, worker, buffer, dstOffset, bytes));
        return writes.size() - 1;
    }

    /** The next piece of {@code write}: its transfer's tag. */
    Tag tag(int write) {
        return new Tag(write, order.getAndIncrement());
    }

    /** The CRC32C of a tagged transfer's {@code length} bytes, as the data plane took it. */
    void add(Tag tag, int crc, long length) {
        pieces.add(new Piece(tag.write(), tag.order(), crc, length));
        summedBytes.addAndGet(length);
    }

    /**
     * A tagged transfer of {@code length} bytes that completed unsummed, whose source bytes are
     * those of the summed transfer tagged {@code of}: it counts with that one's CRC32C once that
     * one completed too ({@link #digests}), and not at all otherwise.
     */
    void twin(Tag tag, Tag of, long length) {
        twins.add(new Twin(tag.write(), tag.order(), of.order(), length));
        twinnedBytes.addAndGet(length);
    }

    /** Bytes of completed transfers the data plane summed as it moved them. */
    long summedBytes() {
        return summedBytes.get();
    }

    /** Bytes of completed transfers that went unsummed, as twins of summed ones. */
    long twinnedBytes() {
        return twinnedBytes.get();
    }

    /**
     * Every write's digest, summed per key, grouped by the instance it was sent to.
     *
     * @throws ApplyFailure naming the worker when a write's checksummed pieces do not add up to its
     *     bytes (a transfer left out of the tally)
     */
    synchronized Map<String, Map<LandedProof.Key, LandedProof.Digest>> digests() {
        Map<Integer, List<Piece>> byWrite = new HashMap<>();
        Map<Long, Piece> byOrder = new HashMap<>();
        for (Piece p : pieces) {
            byWrite.computeIfAbsent(p.write(), k -> new ArrayList<>()).add(p);
            byOrder.put(p.order(), p);
        }
        for (Twin t : twins) {
            Piece summed = byOrder.get(t.of());
            if (summed != null && summed.length() == t.length()) {
                byWrite.computeIfAbsent(t.write(), k -> new ArrayList<>())
                        .add(new Piece(t.write(), t.order(), summed.crc(), t.length()));
            }
        }
        Map<String, Map<LandedProof.Key, LandedProof.Digest>> out = new HashMap<>();
        for (int i = 0; i < writes.size(); i++) {
            Write w = writes.get(i);
            List<Piece> mine = byWrite.getOrDefault(i, new ArrayList<>());
            mine.sort((a, b) -> Long.compare(a.order(), b.order()));
            int crc = 0;
            long length = 0;
            for (Piece p : mine) {
                crc = length == 0 ? p.crc() : Crc32c.combine(crc, p.crc(), p.length());
                length += p.length();
            }
            if (length != w.bytes()) {
                throw new ApplyFailure(
                        w.worker(),
                        "the checksums taken of the write into buffer '"
                                + w.buffer()
                                + "' of "
                                + w.worker()
                                + " at "
                                + w.dstOffset()
                                + " cover "
                                + length
                                + " of its "
                                + w.bytes()
                                + " bytes");
            }
            out.computeIfAbsent(w.instance(), k -> new HashMap<>())
                    .merge(
                            new LandedProof.Key(w.sender(), w.worker(), w.buffer()),
                            new LandedProof.Digest(
                                    LandedProof.bound(w.buffer(), w.dstOffset(), crc, length),
                                    length),
                            (a, b) -> a.plus(b.sum(), b.bytes()));
        }
        return out;
    }
}
