package io.weightrelay.reshard.checksum;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.plan.Plan;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Proves what the readers of an update read against what the publisher registered: every range the
 * plan reads must be reported by its reader (and nothing else), and for every object whose ranges
 * tile it whole, the ranges' CRC32Cs combined in offset order must equal the object's registered
 * checksum. No byte is read for this: the readers checksummed the bytes they read anyway, as they
 * landed in their staging.
 *
 * <p>An object the plan reads only in part (bytes no worker needs are never read) is proven with
 * the verifier's own read of the bytes the plan leaves unread ({@link #unread}): their CRC32Cs,
 * passed as {@code ownReads}, fill the holes, so the object's ranges tile it whole again. Such
 * objects are counted in {@link Result#partialObjects}; without own reads of their holes they are
 * also {@link Result#unprovenObjects}.
 */
public final class ObjectVerification {

    /** An object as the publisher registered it. */
    public record Registered(long size, int crc) {}

    /** A range the plan has {@code reader} read. */
    public record ExpectedRange(long offset, long length, String reader) {}

    /**
     * The first thing that failed: the object, the loaders that read it, what is wrong; {@code
     * corrupt} when what was read does not match the published checksum (rather than a report that
     * disagrees with the plan).
     */
    public record Failure(String object, List<String> readers, boolean corrupt, String message) {}

    /** A byte range of an object that the plan has no reader read. */
    public record Unread(long offset, long length) {}

    /**
     * What was proven. {@code verifiedObjects} counts every object proven against its published
     * checksum, including objects read only in part whose unread bytes the verifier read itself;
     * {@code partialObjects} counts the objects read only in part, proven or not, and {@code
     * unprovenObjects} those of them that could not be proven. {@code failure} is null when
     * everything read matched.
     */
    public record Result(
            int verifiedObjects,
            int partialObjects,
            int unprovenObjects,
            long verifiedBytes,
            Failure failure) {
        public boolean ok() {
            return failure == null;
        }
    }

    private record Reported(RangeChecksums.Entry entry, String reader) {}

    private static final String EXPECTED_MAGIC = "wr.expected.v1";

    private ObjectVerification() {}

    /** The ranges every object is read in, by object id, from the plan's reads. */
    public static Map<String, List<ExpectedRange>> expected(Plan plan) {
        Map<String, List<ExpectedRange>> byObject = new HashMap<>();
        for (int read = 0; read < plan.readCount(); read++) {
            String object = plan.objectId(plan.readObject(read));
            String reader = plan.workerInstance(plan.readReader(read));
            List<ExpectedRange> list = byObject.computeIfAbsent(object, o -> new ArrayList<>());
            for (int r = plan.rangeFirst(read); r < plan.rangeEnd(read); r++) {
                list.add(new ExpectedRange(plan.rangeStart(r), plan.rangeLength(r), reader));
            }
        }
        for (List<ExpectedRange> list : byObject.values()) {
            list.sort(Comparator.comparingLong(ExpectedRange::offset));
        }
        return byObject;
    }

    /**
     * {@link #expected(Plan)} in a compact binary encoding, written in one pass over the plan's
     * reads (the object ids and reader instances once each, then per read its object, reader and
     * ranges as varints): what the all-applied barrier needs of a plan, a fraction of the plan's
     * own encoding, so that proving an update never decodes the whole plan.
     */
    public static byte[] encodeExpected(Plan plan) {
        ByteSink out = new ByteSink(1024 + plan.readCount() * 8);
        out.string(EXPECTED_MAGIC);
        out.varInt(plan.objectCount());
        for (int o = 0; o < plan.objectCount(); o++) {
            out.string(plan.objectId(o));
        }
        out.varInt(plan.workerCount());
        for (int w = 0; w < plan.workerCount(); w++) {
            out.string(plan.workerInstance(w));
        }
        out.varInt(plan.readCount());
        for (int read = 0; read < plan.readCount(); read++) {
            out.varInt(plan.readObject(read)).varInt(plan.readReader(read));
            out.varInt(plan.rangeEnd(read) - plan.rangeFirst(read));
            for (int r = plan.rangeFirst(read); r < plan.rangeEnd(read); r++) {
                out.varLong(plan.rangeStart(r)).varLong(plan.rangeLength(r));
            }
        }
        return out.toByteArray();
    }

    /** The inverse of {@link #encodeExpected(Plan)}: equal to {@link #expected(Plan)}. */
    public static Map<String, List<ExpectedRange>> decodeExpected(byte[] encoded) {
        ByteSource in = new ByteSource(encoded);
        in.expectMagic(EXPECTED_MAGIC);
        String[] objects = new String[in.count()];
        for (int o = 0; o < objects.length; o++) {
            objects[o] = in.string();
        }
        String[] readers = new String[in.count()];
        for (int w = 0; w < readers.length; w++) {
            // one String per instance, shared by every range it reads
            readers[w] = in.string().intern();
        }
        int reads = in.count();
        Map<String, List<ExpectedRange>> byObject = new HashMap<>();
        for (int read = 0; read < reads; read++) {
            String object = objects[index(in.varInt(), objects.length, "object")];
            String reader = readers[index(in.varInt(), readers.length, "reader")];
            List<ExpectedRange> list = byObject.computeIfAbsent(object, o -> new ArrayList<>());
            int ranges = in.count();
            for (int r = 0; r < ranges; r++) {
                list.add(new ExpectedRange(in.varLong(), in.varLong(), reader));
            }
        }
        in.expectEnd();
        for (List<ExpectedRange> list : byObject.values()) {
            list.sort(Comparator.comparingLong(ExpectedRange::offset));
        }
        return byObject;
    }

    private static int index(int value, int count, String what) {
        if (value < 0 || value >= count) {
            throw new CodecException(what + " index " + value + " out of range 0.." + count);
        }
        return value;
    }

    /**
     * The bytes of each object that the plan reads in part and no reader reads, by object id, in
     * offset order: what a verifier reads itself to prove such an object against its whole-object
     * checksum. Objects the plan does not read at all are left out (nothing of them is served), and
     * so are objects whose planned ranges overlap or overrun them (the proof fails those anyway).
     */
    public static Map<String, List<Unread>> unread(
            Map<String, List<ExpectedRange>> expected, Map<String, Registered> registered) {
        Map<String, List<Unread>> out = new HashMap<>();
        for (Map.Entry<String, List<ExpectedRange>> e : expected.entrySet()) {
            Registered reg = registered.get(e.getKey());
            if (reg == null || e.getValue().isEmpty()) {
                continue;
            }
            List<Unread> holes = new ArrayList<>();
            long at = 0;
            boolean sound = true;
            for (ExpectedRange r : e.getValue()) {
                if (r.offset() < at || r.offset() + r.length() > reg.size()) {
                    sound = false;
                    break;
                }
                if (r.offset() > at) {
                    holes.add(new Unread(at, r.offset() - at));
                }
                at = r.offset() + r.length();
            }
            if (sound && at < reg.size()) {
                holes.add(new Unread(at, reg.size() - at));
            }
            if (sound && !holes.isEmpty()) {
                out.put(e.getKey(), holes);
            }
        }
        return out;
    }

    /** {@link #verify(Map, Map, Map, Map)} with no reads of the verifier's own. */
    public static Result verify(
            Map<String, RangeChecksums> reports,
            Map<String, Registered> registered,
            Map<String, List<ExpectedRange>> expected) {
        return verify(reports, registered, expected, Map.of());
    }

    /**
     * @param reports every reader's range checksums, by loader instance
     * @param registered every object of the generation
     * @param expected the plan's ranges by object ({@link #expected(Plan)}); null checks only what
     *     was reported
     * @param ownReads the CRC32C of the ranges the verifier read itself from the store, by object:
     *     the {@link #unread} bytes of the objects read only in part
     */
    public static Result verify(
            Map<String, RangeChecksums> reports,
            Map<String, Registered> registered,
            Map<String, List<ExpectedRange>> expected,
            Map<String, List<RangeChecksums.Entry>> ownReads) {
        Map<String, List<Reported>> byObject = new HashMap<>();
        for (Map.Entry<String, RangeChecksums> report : reports.entrySet()) {
            for (RangeChecksums.Entry e : report.getValue().entries()) {
                byObject.computeIfAbsent(e.object(), o -> new ArrayList<>())
                        .add(new Reported(e, report.getKey()));
            }
        }
        if (expected != null) {
            for (String object : expected.keySet()) {
                byObject.putIfAbsent(object, List.of());
            }
        }
        // Objects are checked in any order (sorting 70,000 names that share long prefixes was a
        // fifth of the proof at Kimi-K2 scale); the result is as if in name order: the failure
        // of the first failing object by name, counting only the objects named before it.
        Outcome[] outcomes = new Outcome[byObject.size()];
        int n = 0;
        String firstFailed = null;
        for (Map.Entry<String, List<Reported>> entry : byObject.entrySet()) {
            Outcome o =
                    check(
                            entry.getKey(),
                            entry.getValue(),
                            ownReads.getOrDefault(entry.getKey(), List.of()),
                            registered,
                            expected);
            outcomes[n++] = o;
            if (o.failure != null && (firstFailed == null || o.object.compareTo(firstFailed) < 0)) {
                firstFailed = o.object;
            }
        }
        int verified = 0;
        int partial = 0;
        int unproven = 0;
        long bytes = 0;
        Outcome failed = null;
        for (Outcome o : outcomes) {
            if (firstFailed != null && o.object.compareTo(firstFailed) >= 0) {
                if (o.object.equals(firstFailed)) {
                    failed = o;
                }
                continue;
            }
            if (o.partial) {
                partial++;
            }
            if (o.proven) {
                verified++;
                bytes += o.bytes;
            } else if (o.failure == null) {
                unproven++;
            }
        }
        if (failed != null && !failed.countsBefore) {
            return new Result(0, 0, 0, 0, failed.failure);
        }
        return new Result(
                verified, partial, unproven, bytes, failed == null ? null : failed.failure);
    }

    /**
     * What one object's check found: a failure, or whether it was read in part and proven (its
     * verified bytes). A failure against the plan reports the objects verified before it; any other
     * reports none.
     */
    private record Outcome(
            String object,
            Failure failure,
            boolean countsBefore,
            boolean partial,
            boolean proven,
            long bytes) {}

    private static Outcome check(
            String object,
            List<Reported> reported,
            List<RangeChecksums.Entry> own,
            Map<String, Registered> registered,
            Map<String, List<ExpectedRange>> expected) {
        List<Reported> got = new ArrayList<>(reported);
        got.sort(Comparator.comparingLong((Reported r) -> r.entry().offset()));
        Registered reg = registered.get(object);
        if (reg == null) {
            return failedOutcome(object, got, "is not an object of this generation", false);
        }
        if (expected != null) {
            Failure f = matchPlan(object, got, expected.getOrDefault(object, List.of()));
            if (f != null) {
                return new Outcome(object, f, true, false, false, 0);
            }
        }
        // What the readers read, and what the verifier read itself of the rest (reader null).
        List<Reported> all = got;
        if (!own.isEmpty()) {
            all = new ArrayList<>(got);
            for (RangeChecksums.Entry e : own) {
                all.add(new Reported(e, null));
            }
            all.sort(Comparator.comparingLong((Reported r) -> r.entry().offset()));
        }
        long at = 0;
        int crc = 0;
        boolean whole = true;
        boolean readInPart = false;
        for (Reported r : all) {
            RangeChecksums.Entry e = r.entry();
            if (e.offset() < at) {
                return failedOutcome(
                        object,
                        got,
                        "was read twice: ["
                                + e.offset()
                                + ", "
                                + e.end()
                                + ") by "
                                + readerName(r)
                                + " overlaps bytes read before",
                        false);
            }
            if (e.end() > reg.size()) {
                return failedOutcome(
                        object,
                        got,
                        "has "
                                + reg.size()
                                + " bytes but "
                                + readerName(r)
                                + " reported ["
                                + e.offset()
                                + ", "
                                + e.end()
                                + ")",
                        false);
            }
            if (e.offset() > at) {
                whole = false;
            }
            readInPart |= r.reader() == null;
            crc = Crc32c.combine(crc, e.crc(), e.length());
            at = e.end();
        }
        if (!whole || at != reg.size()) {
            return new Outcome(object, null, false, true, false, 0);
        }
        if (crc != reg.crc()) {
            return failedOutcome(
                    object,
                    got,
                    "does not match its registered checksum: read "
                            + Crc32c.format(crc)
                            + ", published "
                            + Crc32c.format(reg.crc())
                            + (readInPart ? " (with the verifier's own read of the rest)" : ""),
                    true);
        }
        return new Outcome(object, null, false, readInPart, true, reg.size());
    }

    private static String readerName(Reported r) {
        return r.reader() == null ? "the verifier's own read" : r.reader();
    }

    private static Outcome failedOutcome(
            String object, List<Reported> got, String what, boolean corrupt) {
        return new Outcome(
                object, failed(object, got, what, corrupt).failure(), false, false, false, 0);
    }

    private static Failure matchPlan(String object, List<Reported> got, List<ExpectedRange> want) {
        int i = 0;
        int j = 0;
        while (i < got.size() || j < want.size()) {
            Reported g = i < got.size() ? got.get(i) : null;
            ExpectedRange w = j < want.size() ? want.get(j) : null;
            if (g != null
                    && w != null
                    && g.entry().offset() == w.offset()
                    && g.entry().length() == w.length()
                    && g.reader().equals(w.reader())) {
                i++;
                j++;
                continue;
            }
            if (w != null && (g == null || w.offset() <= g.entry().offset())) {
                return new Failure(
                        object,
                        List.of(w.reader()),
                        false,
                        "object "
                                + object
                                + ": "
                                + w.reader()
                                + " reported no checksum of ["
                                + w.offset()
                                + ", "
                                + (w.offset() + w.length())
                                + "), which the plan has it read");
            }
            return new Failure(
                    object,
                    List.of(g.reader()),
                    false,
                    "object "
                            + object
                            + ": "
                            + g.reader()
                            + " reported a checksum of ["
                            + g.entry().offset()
                            + ", "
                            + g.entry().end()
                            + "), which the plan does not have it read");
        }
        return null;
    }

    private static Result failed(String object, List<Reported> got, String what, boolean corrupt) {
        TreeSet<String> readers = new TreeSet<>();
        for (Reported r : got) {
            if (r.reader() != null) {
                readers.add(r.reader());
            }
        }
        return new Result(
                0,
                0,
                0,
                0,
                new Failure(
                        object,
                        List.copyOf(readers),
                        corrupt,
                        "object "
                                + object
                                + " (read by "
                                + String.join(", ", readers)
                                + ") "
                                + what));
    }
}
