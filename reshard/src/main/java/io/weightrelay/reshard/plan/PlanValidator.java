package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks a whole plan against its inputs, independently of how it was made:
 *
 * <ul>
 *   <li>it was made for these inputs (digests, workers, objects);
 *   <li>single pull: read ranges lie inside their objects and no store byte is read twice;
 *   <li>every write's source bytes were read by its read;
 *   <li>coverage without overlap: every consumer buffer receives exactly the bytes its registration
 *       holds, each byte once (compatibility nodes through their fan-out, parameter-direct workers
 *       relayed on their node through the delegate write they follow);
 *   <li>byte conservation: bytes read equal the bytes the placement needs from the store, and bytes
 *       delivered equal the bytes the placement stores.
 * </ul>
 */
public final class PlanValidator {
    private static final int MAX_PROBLEMS = 20;

    private PlanValidator() {}

    public static ValidationReport validate(
            Plan plan, SourceManifest manifest, TargetPlacement placement) {
        return validate(plan, manifest, placement, Demands.of(manifest, placement));
    }

    public static ValidationReport validate(
            Plan plan, SourceManifest manifest, TargetPlacement placement, Demands demands) {
        List<String> problems = new ArrayList<>();
        if (!plan.sourceDigest().equals(manifest.digest())) {
            problems.add("plan was made for source manifest " + plan.sourceDigest());
        }
        if (!plan.targetDigest().equals(placement.digest())) {
            problems.add("plan was made for target placement " + plan.targetDigest());
        }
        List<Worker> workers = placement.workers();
        if (plan.workerCount() != workers.size()) {
            problems.add(
                    "plan has " + plan.workerCount() + " workers, placement " + workers.size());
            return new ValidationReport(problems, 0, 0, 0);
        }
        for (int w = 0; w < workers.size(); w++) {
            if (!plan.workerId(w).equals(workers.get(w).id())
                    || plan.workerMode(w) != workers.get(w).mode()) {
                problems.add("worker " + workers.get(w).id() + " differs from the plan's");
                return new ValidationReport(problems, 0, 0, 0);
            }
        }
        List<StoredFragment> fragments = manifest.fragments();
        if (plan.objectCount() != fragments.size()) {
            problems.add("plan objects differ from the manifest's");
            return new ValidationReport(problems, 0, 0, 0);
        }
        long[] base = new long[fragments.size()];
        long cursor = 0;
        for (int o = 0; o < fragments.size(); o++) {
            if (!plan.objectId(o).equals(fragments.get(o).fragment())
                    || plan.objectBytes(o) != fragments.get(o).bytes()) {
                problems.add("object " + fragments.get(o).fragment() + " differs from the plan's");
                return new ValidationReport(problems, 0, 0, 0);
            }
            base[o] = cursor;
            cursor += fragments.get(o).bytes();
        }

        long readBytes = checkReads(plan, base, problems);

        // Destinations: direct writes per (worker, buffer); fan-out writes per node.
        Map<Long, Intervals> received = new HashMap<>();
        Map<Integer, Intervals> nodeReceived = new TreeMap<>();
        int[] compatOnNode = new int[plan.nodes().count()];
        for (int w = 0; w < plan.workerCount(); w++) {
            if (plan.workerMode(w) == Mode.COMPAT) {
                compatOnNode[plan.workerNode(w)]++;
            }
        }
        long delivered = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            int readerNode = plan.workerNode(plan.readReader(i));
            // the parameter-direct fan-out write the relayed writes that follow copy, or -1
            int delegate = -1;
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                int dst = plan.writeDst(x);
                long[][] loops = loops(plan, x, false);
                boolean fanout = (plan.writeFlags(x) & Plan.FANOUT) != 0;
                boolean relayed = (plan.writeFlags(x) & Plan.RELAYED) != 0;
                boolean compat = plan.workerMode(dst) == Mode.COMPAT;
                String problem = null;
                if (relayed) {
                    if (fanout || compat || delegate < 0) {
                        problem = " is relayed but follows no parameter-direct fan-out write";
                    } else if (plan.workerNode(dst) != plan.workerNode(plan.writeDst(delegate))
                            || dst == plan.writeDst(delegate)
                            || !sameGeometry(plan, delegate, x)) {
                        problem = " is relayed but is not its delegate's bytes on its node";
                    }
                } else if (fanout && !compat) {
                    delegate = x;
                    if (plan.workerNode(dst) == readerNode
                            || (plan.writeFlags(x) & Plan.NOTIFY) == 0
                            || x + 1 == plan.writeEnd(i)
                            || (plan.writeFlags(x + 1) & Plan.RELAYED) == 0) {
                        problem =
                                " has the fan-out flag but relays nothing to its node from"
                                        + " another";
                    }
                } else {
                    delegate = -1;
                    if (fanout != compat) {
                        problem = (compat ? " lacks" : " has") + " the fan-out flag";
                    }
                }
                if (problem != null) {
                    problems.add("write to " + plan.workerId(dst) + problem);
                    continue;
                }
                fanout &= compat;
                Intervals target =
                        fanout
                                ? nodeReceived.computeIfAbsent(
                                        plan.workerNode(dst), k -> new Intervals(1024))
                                : received.computeIfAbsent(
                                        key(dst, plan.writeBuffer(x)), k -> new Intervals(2));
                target.addRun(plan.writeDstOffset(x), plan.writeLength(x), loops[0], loops[1]);
                delivered += plan.writeBytes(x) * (fanout ? compatOnNode[plan.workerNode(dst)] : 1);
            }
        }

        Map<String, Integer> bufferIndex = new HashMap<>();
        for (int b = 0; b < plan.bufferCount(); b++) {
            bufferIndex.put(plan.buffer(b), b);
        }
        long expected = 0;
        Map<List<TargetFragment>, Footprint> footprintOf = new java.util.IdentityHashMap<>();
        SafetensorsLayout layout = null;
        boolean[] nodeChecked = new boolean[plan.nodes().count()];
        for (int w = 0; w < workers.size(); w++) {
            Worker worker = workers.get(w);
            if (worker.mode() == Mode.COMPAT) {
                if (layout == null) {
                    layout = SafetensorsLayout.of(manifest);
                }
                expected += layout.imageBytes() - layout.dataStart();
                int node = plan.workerNode(w);
                if (!nodeChecked[node]) {
                    nodeChecked[node] = true;
                    Intervals want = new Intervals(1);
                    want.add(layout.dataStart(), layout.imageBytes());
                    compare(
                            "compatibility workers on " + plan.nodes().name(node),
                            nodeReceived.remove(node),
                            want.sortedDisjoint(),
                            problems);
                }
                continue;
            }
            // Workers sharing one fragment list (one template) share its footprints.
            Footprint want =
                    footprintOf.computeIfAbsent(worker.fragments(), l -> footprint(worker));
            expected += want.bytes();
            for (Map.Entry<String, Intervals> e : want.merged().entrySet()) {
                Intervals merged = e.getValue();
                String what = "worker " + worker.id() + " buffer " + e.getKey();
                if (merged == null) {
                    problems.add(what + ": registered fragments overlap");
                    continue;
                }
                Integer b = bufferIndex.get(e.getKey());
                compare(what, b == null ? null : received.remove(key(w, b)), merged, problems);
            }
        }
        for (Long k : received.keySet()) {
            if (received.get(k).size() > 0) {
                problems.add(
                        "worker "
                                + plan.workerId((int) (k >>> 32))
                                + " receives bytes into unregistered buffer "
                                + plan.buffer((int) (k & 0xFFFFFFFFL)));
            }
        }
        for (Integer node : nodeReceived.keySet()) {
            problems.add(
                    "node " + plan.nodes().name(node) + " receives fan-out without compat workers");
        }
        if (readBytes != demands.storeBytes()) {
            problems.add(
                    "store bytes read "
                            + readBytes
                            + " differ from the bytes the placement needs "
                            + demands.storeBytes());
        }
        if (delivered != expected) {
            problems.add("delivered " + delivered + " bytes, the placement holds " + expected);
        }
        return new ValidationReport(
                problems.size() > MAX_PROBLEMS ? problems.subList(0, MAX_PROBLEMS) : problems,
                readBytes,
                delivered,
                expected);
    }

    /** Whether two writes of one read move the same bytes to the same place of their workers. */
    private static boolean sameGeometry(Plan plan, int a, int b) {
        if (plan.writeBuffer(a) != plan.writeBuffer(b)
                || plan.writeSrc(a) != plan.writeSrc(b)
                || plan.writeDstOffset(a) != plan.writeDstOffset(b)
                || plan.writeLength(a) != plan.writeLength(b)
                || plan.loopEnd(a) - plan.loopFirst(a) != plan.loopEnd(b) - plan.loopFirst(b)) {
            return false;
        }
        for (int k = 0; k < plan.loopEnd(a) - plan.loopFirst(a); k++) {
            int la = plan.loopFirst(a) + k;
            int lb = plan.loopFirst(b) + k;
            if (plan.loopCount(la) != plan.loopCount(lb)
                    || plan.loopSrcStride(la) != plan.loopSrcStride(lb)
                    || plan.loopDstStride(la) != plan.loopDstStride(lb)) {
                return false;
            }
        }
        return true;
    }

    /** A fragment list's bytes and, per buffer, its merged footprint (null: fragments overlap). */
    private record Footprint(long bytes, Map<String, Intervals> merged) {}

    private static Footprint footprint(Worker worker) {
        long bytes = 0;
        for (TargetFragment f : worker.fragments()) {
            bytes += f.bytes();
        }
        Map<String, Intervals> merged = new TreeMap<>();
        footprints(worker).forEach((buffer, iv) -> merged.put(buffer, iv.sortedDisjoint()));
        return new Footprint(bytes, merged);
    }

    /** Per buffer, the bytes a direct worker's registered fragments occupy (unmerged). */
    static Map<String, Intervals> footprints(Worker worker) {
        Map<String, Intervals> want = new TreeMap<>();
        String lastBuffer = null;
        Intervals iv = null;
        for (TargetFragment f : worker.fragments()) {
            if (!f.buffer().equals(lastBuffer)) {
                lastBuffer = f.buffer();
                iv = want.computeIfAbsent(lastBuffer, k -> new Intervals(2));
            }
            long[] counts = new long[f.shape().rank()];
            long[] strides = new long[counts.length];
            for (int d = 0; d < counts.length; d++) {
                counts[d] = f.shape().dim(d);
                strides[d] = f.strides().dim(d);
            }
            if (f.bytes() > 0) {
                iv.addRun(f.bufferOffset(), f.dtype().bytes(), counts, strides);
            }
        }
        return want;
    }

    private static long key(int worker, int buffer) {
        return ((long) worker << 32) | buffer;
    }

    static void compare(String what, Intervals got, Intervals want, List<String> problems) {
        if (got == null) {
            if (want.size() > 0) {
                problems.add(what + ": receives nothing");
            }
            return;
        }
        Intervals merged = got.sortedDisjoint();
        if (merged == null) {
            problems.add(what + ": a byte is written twice");
        } else if (!merged.sameAs(want)) {
            problems.add(
                    what
                            + ": receives "
                            + merged.bytes()
                            + " bytes, registration holds "
                            + want.bytes()
                            + (merged.bytes() == want.bytes() ? " at other offsets" : ""));
        }
    }

    static long[][] loops(Plan plan, int write, boolean source) {
        int first = plan.loopFirst(write);
        int n = plan.loopEnd(write) - first;
        long[] counts = new long[n];
        long[] strides = new long[n];
        for (int l = 0; l < n; l++) {
            counts[l] = plan.loopCount(first + l);
            strides[l] = source ? plan.loopSrcStride(first + l) : plan.loopDstStride(first + l);
        }
        return new long[][] {counts, strides};
    }

    private static long checkReads(Plan plan, long[] base, List<String> problems) {
        Intervals all = new Intervals(plan.readCount() + 16);
        long readBytes = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            int object = plan.readObject(i);
            long spanStart = plan.readStart(i);
            long spanEnd = spanStart + plan.readSpan(i);
            Intervals mine = new Intervals(4);
            for (int r = plan.rangeFirst(i); r < plan.rangeEnd(i); r++) {
                long start = plan.rangeStart(r);
                long end = start + plan.rangeLength(r);
                if (start < spanStart || end > spanEnd || end > plan.objectBytes(object)) {
                    problems.add("read of " + plan.objectId(object) + ": range outside its span");
                }
                all.add(base[object] + start, base[object] + end);
                mine.add(start - spanStart, end - spanStart);
                readBytes += end - start;
            }
            Intervals ranges = mine.sortedDisjoint();
            if (ranges == null) {
                problems.add("read of " + plan.objectId(object) + ": ranges overlap");
                continue;
            }
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                long[][] loops = loops(plan, x, true);
                if (!ranges.containsRun(
                        plan.writeSrc(x), plan.writeLength(x), loops[0], loops[1])) {
                    problems.add(
                            "write to "
                                    + plan.workerId(plan.writeDst(x))
                                    + " from "
                                    + plan.objectId(object)
                                    + " sends bytes that were not read");
                }
            }
        }
        if (all.sortedDisjoint() == null) {
            problems.add("a store byte is read more than once");
        }
        return readBytes;
    }
}
