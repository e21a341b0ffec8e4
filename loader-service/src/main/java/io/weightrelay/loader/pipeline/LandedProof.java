package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiFunction;
import java.util.zip.CRC32C;

/**
 * What a receiver proves about the bytes in its buffers before its engine advances: per (sender
 * instance, destination worker, buffer), a digest of every write that landed there, taken once by
 * the sender as its data plane moves the bytes ({@link SentTally}: the CRC32C of each transfer,
 * fused with the copy or the send) and once by the receiver over what its buffer holds once every
 * sender reported SENT ({@link #landed}), before it reports APPLIED. A byte changed on the way (a
 * link, a late write, a buggy relay or fan-out, a write into the buffer after it landed) changes
 * the receiver's digest.
 *
 * <p>A write's checksum is the CRC32C of its bytes in destination order (its contiguous runs one
 * after the other), bound to where it lands: the CRC32C of {@code buffer name || dstOffset}
 * continued over those bytes ({@link Crc32c#combine}), so bytes landing in the wrong place differ
 * too. The digest of a key is the sum (mod 2^64) of its writes' bound checksums, and their byte
 * count: the order writes are taken in does not matter, and one digest covers a whole destination
 * buffer however many tensors land in it (a Kimi-K2-class group reports per destination buffer, not
 * per tensor).
 *
 * <p>Who sent is the loader that wrote the bytes into that buffer: the instance of the worker that
 * read them, except for the copies a node delegate's loader makes, a {@link Plan#RELAYED} write
 * (its delegate, as {@link Slice#receiveFrom} names it) and the copies of a compatibility fan-out
 * to the delegate's node peers (the delegate's instance), so a failure names the loader whose copy
 * went wrong.
 */
public final class LandedProof {

    /** Where a digest's writes landed, and who sent them. */
    public record Key(String sender, String worker, String buffer) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = worker.compareTo(o.worker);
            if (c == 0) {
                c = buffer.compareTo(o.buffer);
            }
            return c != 0 ? c : sender.compareTo(o.sender);
        }
    }

    /** The sum of bound checksums of a key's writes, and their bytes. */
    public record Digest(long sum, long bytes) {
        Digest plus(long checksum, long length) {
            return new Digest(sum + checksum, bytes + length);
        }
    }

    private LandedProof() {}

    /**
     * The digests of the writes of {@code slice}'s reads, as its loader sends them.
     *
     * @param span the bytes of read {@code r} as read into staging (position 0 = the read's first
     *     byte, the origin of its writes' source offsets)
     */
    public static Map<Key, Digest> sent(SliceSchedule slice, Read span) {
        Slice plan = slice.plan();
        Map<Key, Digest> out = new HashMap<>();
        for (int batch = 0; batch < plan.batchCount(); batch++) {
            for (int read : slice.reads(batch)) {
                ByteBuffer bytes = span.of(read);
                int delegate = -1;
                for (int w = plan.writeFirst(read); w < plan.writeEnd(read); w++) {
                    int flags = plan.writeFlags(w);
                    int dst = plan.writeDst(w);
                    String sender;
                    if ((flags & Plan.RELAYED) != 0) {
                        sender = plan.workerInstance(delegate);
                    } else {
                        delegate = dst;
                        sender = plan.workerInstance(plan.readReader(read));
                    }
                    CRC32C crc = new CRC32C();
                    Runs.forEach(
                            plan,
                            w,
                            (src, d, length) -> crc.update(bytes.slice((int) src, (int) length)));
                    String buffer = plan.buffer(plan.writeBuffer(w));
                    long bound =
                            bound(
                                    buffer,
                                    plan.writeDstOffset(w),
                                    (int) crc.getValue(),
                                    plan.writeBytes(w));
                    for (int to : landings(slice, flags, dst)) {
                        out.merge(
                                new Key(
                                        to == dst ? sender : plan.workerInstance(dst),
                                        plan.workerId(to),
                                        buffer),
                                new Digest(bound, plan.writeBytes(w)),
                                (a, b) -> a.plus(b.sum(), b.bytes()));
                    }
                }
            }
        }
        return out;
    }

    /**
     * The digests of what {@code slice}'s workers hold of every write they receive: a read of every
     * received byte.
     *
     * @param view a buffer's bytes, by worker id and buffer id, from its placed base
     */
    public static Map<Key, Digest> landed(
            SliceSchedule slice, BiFunction<String, String, ByteBuffer> view) {
        return landed(
                slice,
                (worker, buffer, offset, length) ->
                        view.apply(worker, buffer).slice((int) offset, (int) length));
    }

    /**
     * The same, reading each contiguous run of every received write through {@code bytes}: a
     * buffer's run, by worker id, buffer id, offset from its placed base and length.
     */
    public static Map<Key, Digest> landed(SliceSchedule slice, Bytes bytes) {
        return prove(slice, bytes).digests();
    }

    /**
     * The copies a node delegate's loader made into {@code slice}'s workers that do not hold what
     * their source holds ({@link Landed#copies}).
     */
    public static List<CopyMismatch> copiesUnlikeTheirSource(SliceSchedule slice, Bytes bytes) {
        return prove(slice, bytes).copies();
    }

    /**
     * What {@code slice}'s workers hold of every write they receive, in one read of every received
     * byte: the digests of {@link #landed}, and the copies unlike their source.
     *
     * <p>A copy is a write a node delegate's loader made into one of the slice's workers from
     * another of them (a relayed write, a compatibility fan-out to the delegate's node peers): the
     * same buffer, the same offsets. The digests cannot see a bad one: the copier reports what it
     * copied, so a copy taken before its source's bytes landed matches its own report, and the
     * source matches the original writer's. So each copy's CRC32C must also equal its source's over
     * the same runs, which the source's digest ties to what the original writer sent (issue 47: a
     * delegate that fanned out before its bytes landed went through the digests unseen). A
     * fan-out's source is one of the write's landings, read for its digest already; a relayed
     * write's source is read once more. Only a copy whose checksum differs is compared byte by
     * byte, to name the first run that differs.
     */
    public static Landed prove(SliceSchedule slice, Bytes bytes) {
        Slice plan = slice.plan();
        Set<Integer> mine = new HashSet<>(slice.myWorkers());
        Map<Key, Digest> digests = new HashMap<>();
        List<CopyMismatch> copies = new ArrayList<>();
        Map<Integer, Integer> crcs = new HashMap<>();
        for (int v = 0; v < plan.receiveCount(); v++) {
            int delegate = plan.receiveDst(v);
            String reader = plan.workerInstance(plan.receiveFrom(v));
            String buffer = plan.buffer(plan.receiveBuffer(v));
            crcs.clear();
            for (int to : landings(slice, plan.receiveFlags(v), delegate)) {
                if (!mine.contains(to)) {
                    continue;
                }
                int crc = crcOf(plan, v, bytes, plan.workerId(to), buffer);
                crcs.put(to, crc);
                digests.merge(
                        new Key(
                                to == delegate ? reader : plan.workerInstance(delegate),
                                plan.workerId(to),
                                buffer),
                        new Digest(
                                bound(buffer, plan.receiveDstOffset(v), crc, plan.receiveBytes(v)),
                                plan.receiveBytes(v)),
                        (a, b) -> a.plus(b.sum(), b.bytes()));
            }
            int source = slice.copySource(v);
            if (!mine.contains(source)) {
                continue;
            }
            String from = plan.workerId(source);
            Integer sourceCrc = crcs.get(source);
            for (int to : slice.copyTargets(v)) {
                if (!mine.contains(to) || to == source) {
                    continue;
                }
                if (sourceCrc == null) {
                    sourceCrc = crcOf(plan, v, bytes, from, buffer);
                }
                String worker = plan.workerId(to);
                Integer copyCrc = crcs.get(to);
                if (copyCrc == null) {
                    copyCrc = crcOf(plan, v, bytes, worker, buffer);
                }
                if (!copyCrc.equals(sourceCrc)) {
                    copies.add(
                            new CopyMismatch(
                                    plan.workerInstance(source),
                                    worker,
                                    from,
                                    buffer,
                                    firstDifference(plan, v, bytes, worker, from, buffer)));
                }
            }
        }
        return new Landed(digests, copies);
    }

    /** What a slice's workers hold of what they received ({@link #prove}). */
    public record Landed(Map<Key, Digest> digests, List<CopyMismatch> copies) {}

    /** The CRC32C of received write {@code v}'s runs as {@code worker}'s buffer holds them. */
    private static int crcOf(Slice plan, int v, Bytes bytes, String worker, String buffer) {
        CRC32C crc = new CRC32C();
        Runs.forEachReceived(
                plan, v, (src, dst, length) -> crc.update(bytes.of(worker, buffer, dst, length)));
        return (int) crc.getValue();
    }

    /**
     * The offset of the first run of received write {@code v} where {@code worker}'s buffer differs
     * from {@code source}'s (the write's offset if none does: the checksums differed, the bytes
     * read again did not).
     */
    private static long firstDifference(
            Slice plan, int v, Bytes bytes, String worker, String source, String buffer) {
        long[] differsAt = {-1};
        Runs.forEachReceived(
                plan,
                v,
                (src, dst, length) -> {
                    if (differsAt[0] < 0
                            && !bytes.of(worker, buffer, dst, length)
                                    .equals(bytes.of(source, buffer, dst, length))) {
                        differsAt[0] = dst;
                    }
                });
        return differsAt[0] >= 0 ? differsAt[0] : plan.receiveDstOffset(v);
    }

    /** A copy by {@code copier}'s loader into {@code worker} unlike its {@code source}'s bytes. */
    public record CopyMismatch(
            String copier, String worker, String source, String buffer, long offset) {
        public String describe() {
            return "the copy "
                    + copier
                    + " made into buffer '"
                    + buffer
                    + "' of "
                    + worker
                    + " differs from what "
                    + source
                    + " holds there (the run at "
                    + offset
                    + ")";
        }
    }

    /** A contiguous run of a worker's buffer, from its placed base. */
    @FunctionalInterface
    public interface Bytes {
        ByteBuffer of(String worker, String buffer, long offset, long length);
    }

    /**
     * What the receiver holds against what the senders sent, for the receiver's own keys: every key
     * of {@code landed} and every key of {@code expected} naming one of {@code workers}.
     *
     * @return a failure naming the worker, its buffer and the sender of each mismatch, in key order
     *     (empty when everything matches)
     */
    public static List<Mismatch> compare(
            Map<Key, Digest> expected, Map<Key, Digest> landed, Collection<String> workers) {
        Map<Key, Digest> want = new TreeMap<>();
        expected.forEach(
                (k, d) -> {
                    if (workers.contains(k.worker())) {
                        want.put(k, d);
                    }
                });
        Map<Key, Digest> have = new TreeMap<>(landed);
        Set<Key> keys = new TreeSet<>(want.keySet());
        keys.addAll(have.keySet());
        List<Mismatch> out = new ArrayList<>();
        for (Key k : keys) {
            Digest w = want.get(k);
            Digest h = have.get(k);
            if (w == null || !w.equals(h)) {
                out.add(new Mismatch(k, w, h));
            }
        }
        return out;
    }

    /** A key whose landed digest differs from the sent one (either may be missing: null). */
    public record Mismatch(Key key, Digest sent, Digest landed) {
        public String describe() {
            if (sent == null) {
                return "buffer '"
                        + key.buffer()
                        + "' of "
                        + key.worker()
                        + " received bytes from "
                        + key.sender()
                        + " that "
                        + key.sender()
                        + " never reported sending";
            }
            if (landed == null) {
                return key.sender()
                        + " reported sending "
                        + sent.bytes()
                        + " bytes into buffer '"
                        + key.buffer()
                        + "' of "
                        + key.worker()
                        + ", which expects none from it";
            }
            return "buffer '"
                    + key.buffer()
                    + "' of "
                    + key.worker()
                    + " does not hold the "
                    + sent.bytes()
                    + " bytes "
                    + key.sender()
                    + " sent into it (their checksums differ)";
        }
    }

    /** The bytes of one of a slice's reads, as read. */
    @FunctionalInterface
    public interface Read {
        ByteBuffer of(int read);
    }

    /** The workers a write to {@code dst} lands in: it, or every compat worker of its node. */
    private static List<Integer> landings(SliceSchedule slice, int flags, int dst) {
        if ((flags & Plan.FANOUT) != 0 && slice.plan().workerMode(dst) == Mode.COMPAT) {
            return slice.compatWorkersBeside(dst);
        }
        return List.of(dst);
    }

    /**
     * A write's checksum bound to where it lands: the CRC32C of the buffer's name, the offset, then
     * its bytes (the name, not a slice's index of it: sender and receiver hold different slices).
     */
    static long bound(String buffer, long dstOffset, int crc, long length) {
        byte[] name = buffer.getBytes(StandardCharsets.UTF_8);
        ByteBuffer place = ByteBuffer.allocate(name.length + 8).put(name).putLong(dstOffset).flip();
        return Integer.toUnsignedLong(Crc32c.combine(Crc32c.of(place), crc, length));
    }

    /** The magic of {@link #encode}'s format. */
    private static final int MAGIC = 0x77726c31; // "wrl1": wr.landed.v1

    /**
     * {@code wr.landed.v1}: the digests one sender addresses to one instance, its workers' keys
     * only (the sender is who reports them): a magic, a count, then per key its worker, its buffer
     * (UTF-8, length-prefixed), the sum and the bytes.
     */
    public static byte[] encode(Map<Key, Digest> digests) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (java.io.DataOutputStream out = new java.io.DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeInt(digests.size());
            for (Map.Entry<Key, Digest> e : new TreeMap<>(digests).entrySet()) {
                out.writeUTF(e.getKey().worker());
                out.writeUTF(e.getKey().buffer());
                out.writeLong(e.getValue().sum());
                out.writeLong(e.getValue().bytes());
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * The digests {@code sender} reported in {@link #encode}'s format.
     *
     * @throws ApplyFailure naming the sender when they cannot be read
     */
    public static Map<Key, Digest> decode(String sender, byte[] encoded) {
        Map<Key, Digest> out = new HashMap<>();
        try (java.io.DataInputStream in =
                new java.io.DataInputStream(new java.io.ByteArrayInputStream(encoded))) {
            if (in.readInt() != MAGIC) {
                throw new java.io.IOException("not wr.landed.v1");
            }
            int count = in.readInt();
            for (int i = 0; i < count; i++) {
                Key k = new Key(sender, in.readUTF(), in.readUTF());
                out.put(k, new Digest(in.readLong(), in.readLong()));
            }
            if (in.read() != -1) {
                throw new java.io.IOException("trailing bytes");
            }
        } catch (java.io.IOException e) {
            throw new ApplyFailure(
                    sender, "the digests " + sender + " reported sending cannot be read: " + e, e);
        }
        return out;
    }
}
