package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.Worker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a loader checks at prepare, with its own registration and nothing but its slice: its reads
 * are disjoint ranges inside their objects and every write sends only bytes its read fetched; its
 * workers receive exactly the bytes they registered, each once (compatibility workers: the whole
 * safetensors image data, through their node's delegates); bytes received equal bytes registered;
 * each relayed write it copies as a delegate copies bytes that delegate receives.
 */
public final class SliceValidator {
    private SliceValidator() {}

    /**
     * @param registered this loader's workers as it registered them
     * @param layout the safetensors layout of the source manifest; needed only when a registered
     *     worker is in compatibility mode, otherwise may be null
     */
    public static ValidationReport validate(
            Slice slice, List<Worker> registered, SafetensorsLayout layout) {
        List<String> problems = new ArrayList<>();
        Map<String, Integer> peer = new HashMap<>();
        for (int p = 0; p < slice.workerCount(); p++) {
            peer.put(slice.workerId(p), p);
        }
        for (Worker w : registered) {
            Integer p = peer.get(w.id());
            if (p == null || !slice.workerInstance(p).equals(slice.instance())) {
                problems.add("worker " + w.id() + " is not in the slice of " + slice.instance());
            } else if (slice.workerMode(p) != w.mode()
                    || !slice.workerNodeName(p).equals(w.node())
                    || !slice.workerSegment(p).equals(w.segment())) {
                problems.add("worker " + w.id() + " is registered differently than planned");
            }
        }
        if (registered.size() != slice.workers().size()) {
            problems.add(
                    "slice has "
                            + slice.workers().size()
                            + " workers, loader registered "
                            + registered.size());
        }
        if (!problems.isEmpty()) {
            return new ValidationReport(problems, 0, 0, 0);
        }

        long readBytes = 0;
        Map<Integer, Intervals> perObject = new TreeMap<>();
        for (int i = 0; i < slice.readCount(); i++) {
            long spanStart = slice.readStart(i);
            long spanEnd = spanStart + slice.readSpan(i);
            Intervals mine = new Intervals(4);
            String object = slice.objectId(slice.readObject(i));
            for (int r = slice.rangeFirst(i); r < slice.rangeEnd(i); r++) {
                long start = slice.rangeStart(r);
                long end = start + slice.rangeLength(r);
                if (start < spanStart
                        || end > spanEnd
                        || end > slice.objectBytes(slice.readObject(i))) {
                    problems.add("read of " + object + ": range outside its span or object");
                }
                mine.add(start - spanStart, end - spanStart);
                perObject
                        .computeIfAbsent(slice.readObject(i), k -> new Intervals(4))
                        .add(start, end);
                readBytes += end - start;
            }
            Intervals ranges = mine.sortedDisjoint();
            if (ranges == null) {
                problems.add("read of " + object + ": ranges overlap");
                continue;
            }
            for (int x = slice.writeFirst(i); x < slice.writeEnd(i); x++) {
                int lf = slice.loopFirst(x);
                int n = slice.loopEnd(x) - lf;
                long[] counts = Arrays.copyOfRange(slice.writes.loops().count(), lf, lf + n);
                long[] strides = Arrays.copyOfRange(slice.writes.loops().srcStride(), lf, lf + n);
                if (!ranges.containsRun(slice.writeSrc(x), slice.writeLength(x), counts, strides)) {
                    problems.add("write from " + object + " sends bytes that were not read");
                }
            }
        }
        for (Map.Entry<Integer, Intervals> e : perObject.entrySet()) {
            if (e.getValue().sortedDisjoint() == null) {
                problems.add("object " + slice.objectId(e.getKey()) + " is read twice");
            }
        }

        Map<String, Intervals> direct = new HashMap<>();
        Map<String, Intervals> byNode = new HashMap<>();
        long delivered = 0;
        Map<String, Integer> compatHere = new HashMap<>();
        for (Worker w : registered) {
            if (w.mode() == Mode.COMPAT) {
                compatHere.merge(w.node(), 1, Integer::sum);
            }
        }
        Set<String> mine = new HashSet<>();
        for (Worker w : registered) {
            mine.add(w.id());
        }
        // What this loader's direct delegates receive, and what it must copy from them.
        Set<String> delegated = new HashSet<>();
        List<Integer> duties = new ArrayList<>();
        for (int v = 0; v < slice.receiveCount(); v++) {
            Slice.ReceiveOp op = slice.receive(v);
            if (op.relayed()) {
                if (mine.contains(op.fromWorker())) {
                    duties.add(v);
                }
                if (!mine.contains(op.worker())) {
                    if (!mine.contains(op.fromWorker())) {
                        problems.add(
                                "relayed write to "
                                        + op.worker()
                                        + " neither lands on nor is copied by this loader");
                    }
                    continue;
                }
            }
            boolean compatFanout =
                    op.fanout() && slice.workerMode(peer.get(op.worker())) == Mode.COMPAT;
            if (op.fanout() && !compatFanout) {
                delegated.add(slice.receiveLanding(v, slice.receiveDst(v)));
            }
            Intervals target;
            if (compatFanout) {
                if (!compatHere.containsKey(op.node())) {
                    problems.add(
                            "fan-out to " + op.node() + " where this loader has no compat worker");
                    continue;
                }
                target = byNode.computeIfAbsent(op.node(), k -> new Intervals(1024));
                delivered += bytes(op) * compatHere.get(op.node());
            } else {
                target =
                        direct.computeIfAbsent(
                                op.worker() + "\u0000" + op.buffer(), k -> new Intervals(2));
                delivered += bytes(op);
            }
            target.addRun(op.dstOffset(), op.length(), op.loopCounts(), op.dstStrides());
        }
        for (int v : duties) {
            int from = slice.receiveFrom(v);
            int to = slice.receiveDst(v);
            if (!delegated.contains(slice.receiveLanding(v, from))
                    || !slice.workerNodeName(from).equals(slice.workerNodeName(to))) {
                problems.add(
                        "relayed write to "
                                + slice.workerId(to)
                                + " copies bytes its delegate "
                                + slice.workerId(from)
                                + " does not receive on its node");
            }
        }
        long expected = 0;
        for (Worker w : registered) {
            if (w.mode() == Mode.COMPAT) {
                if (layout == null) {
                    problems.add(
                            "compatibility worker " + w.id() + " needs the safetensors layout");
                    continue;
                }
                expected += layout.imageBytes() - layout.dataStart();
                if (compatHere.get(w.node()) > 0) {
                    compatHere.put(w.node(), -compatHere.get(w.node()));
                    Intervals want = new Intervals(1);
                    want.add(layout.dataStart(), layout.imageBytes());
                    PlanValidator.compare(
                            "compatibility workers on " + w.node(),
                            byNode.get(w.node()),
                            want.sortedDisjoint(),
                            problems);
                }
                continue;
            }
            for (TargetFragment f : w.fragments()) {
                expected += f.bytes();
            }
            for (Map.Entry<String, Intervals> e : PlanValidator.footprints(w).entrySet()) {
                Intervals merged = e.getValue().sortedDisjoint();
                String what = "worker " + w.id() + " buffer " + e.getKey();
                if (merged == null) {
                    problems.add(what + ": registered fragments overlap");
                    continue;
                }
                PlanValidator.compare(
                        what, direct.remove(w.id() + "\u0000" + e.getKey()), merged, problems);
            }
        }
        for (String k : direct.keySet()) {
            problems.add("bytes for unregistered buffer " + k.replace('\u0000', ' '));
        }
        if (delivered != expected) {
            problems.add("receives " + delivered + " bytes, registered " + expected);
        }
        return new ValidationReport(
                problems.size() > 20 ? problems.subList(0, 20) : problems,
                readBytes,
                delivered,
                expected);
    }

    private static long bytes(Slice.ReceiveOp op) {
        long bytes = op.length();
        for (long c : op.loopCounts()) {
            bytes *= c;
        }
        return bytes;
    }
}
