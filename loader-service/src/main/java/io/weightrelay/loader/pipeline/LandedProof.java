package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import java.nio.ByteBuffer;
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
 * the sender over the bytes it sends (from its proven staging) and once by the receiver over what
 * its buffer holds after the applied barrier. A byte changed on the way (a link, a late write, a
 * buggy relay or fan-out, a write into the buffer after it landed) changes the receiver's digest.
 *
 * <p>A write's checksum is the CRC32C of its bytes in destination order (its contiguous runs one
 * after the other), bound to where it lands: the CRC32C of {@code buffer || dstOffset} continued
 * over those bytes ({@link Crc32c#combine}), so bytes landing in the wrong place differ too. The
 * digest of a key is the sum (mod 2^64) of its writes' bound checksums, and their byte count: the
 * order writes are taken in does not matter, and one digest covers a whole destination buffer
 * however many tensors land in it (a Kimi-K2-class group reports per destination buffer, not per
 * tensor).
 *
 * <p>Who sent is the instance of the worker that read the bytes, except for a {@link Plan#RELAYED}
 * write, which the node delegate's loader copies: its delegate's instance (as {@link
 * Slice#receiveFrom} names it, so a failure names the loader whose copy went wrong).
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
                    int buffer = plan.writeBuffer(w);
                    long bound =
                            bound(
                                    buffer,
                                    plan.writeDstOffset(w),
                                    (int) crc.getValue(),
                                    plan.writeBytes(w));
                    for (int to : landings(slice, flags, dst)) {
                        out.merge(
                                new Key(sender, plan.workerId(to), plan.buffer(buffer)),
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
        Slice plan = slice.plan();
        Set<Integer> mine = new HashSet<>(slice.myWorkers());
        Map<Key, Digest> out = new HashMap<>();
        for (int v = 0; v < plan.receiveCount(); v++) {
            String sender = plan.workerInstance(plan.receiveFrom(v));
            String buffer = plan.buffer(plan.receiveBuffer(v));
            for (int to : landings(slice, plan.receiveFlags(v), plan.receiveDst(v))) {
                if (!mine.contains(to)) {
                    continue;
                }
                ByteBuffer bytes = view.apply(plan.workerId(to), buffer);
                CRC32C crc = new CRC32C();
                Runs.forEachReceived(
                        plan,
                        v,
                        (src, dst, length) -> crc.update(bytes.slice((int) dst, (int) length)));
                out.merge(
                        new Key(sender, plan.workerId(to), buffer),
                        new Digest(
                                bound(
                                        plan.receiveBuffer(v),
                                        plan.receiveDstOffset(v),
                                        (int) crc.getValue(),
                                        plan.receiveBytes(v)),
                                plan.receiveBytes(v)),
                        (a, b) -> a.plus(b.sum(), b.bytes()));
            }
        }
        return out;
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

    /** A write's checksum bound to where it lands: the CRC32C of buffer, offset, then its bytes. */
    static long bound(int buffer, long dstOffset, int crc, long length) {
        ByteBuffer place = ByteBuffer.allocate(12).putInt(buffer).putLong(dstOffset).flip();
        return Integer.toUnsignedLong(Crc32c.combine(Crc32c.of(place), crc, length));
    }
}
