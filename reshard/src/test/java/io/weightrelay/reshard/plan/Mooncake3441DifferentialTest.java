package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The differential oracle: random deployments that Mooncake's #3187 contracts can express (TP on
 * either dimension, uneven splits, replicated norms, EP with whole experts, DP replicas, pipeline
 * stages, tied embeddings), planned by our {@link Planner} and by the real #3441 planner ({@code
 * plan_stored_transfer_to_target_placement} of the pinned {@code mooncake-transfer-engine-non-cuda}
 * wheel, in the test venv {@code python/ci-venv.sh} makes; {@code WEIGHT_RELAY_VENV} moves it).
 * Both plans are normalised into what each target rank receives: per target box, the maximal runs
 * of (byte offset in the box, object key, object offset, length). Ours comes from running the plan,
 * slice by slice, on tagged bytes (every stored byte carries its object and offset), fan-outs and
 * relays included; #3441's from its transfer regions ({@code src/test/python/
 * plan_with_mooncake_3441.py}). They must be equal, and our plan must also read each demanded byte
 * once and deliver exactly the placement's bytes.
 *
 * <p>Each run draws a fresh base seed (printed; {@code -Dmooncake3441.seed=N} replays it); a
 * failure names every failing case's seed. Any disagreement is a bug in one of the two planners.
 */
class Mooncake3441DifferentialTest {
    private static final int CASES = 240;
    private static final String BUFFER = "params";
    private static final long UNWRITTEN = -1;

    @Test
    void ourPlannerDeliversWhatMooncake3441DeliversToEveryRank() throws Exception {
        long base = Long.getLong("mooncake3441.seed", new Random().nextLong());
        System.out.println(
                "Mooncake3441DifferentialTest: base seed " + base + " (" + CASES + " cases)");
        List<OracleCase> cases = new ArrayList<>();
        for (int i = 0; i < CASES; i++) {
            cases.add(OracleCase.random(base + i));
        }
        Path dir = Path.of("target", "mooncake-3441");
        Files.createDirectories(dir);
        Path in = dir.resolve("cases.json");
        Path out = dir.resolve("runs.txt");
        Files.writeString(in, OracleCase.json(cases), StandardCharsets.UTF_8);
        runReference(in, out);

        Map<Long, List<String>> theirs = new HashMap<>();
        Map<Long, String> refused = new TreeMap<>();
        for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            String[] head = line.split(" ", 3);
            long seed = Long.parseLong(head[1]);
            if (head[0].equals("refused")) {
                refused.put(seed, head[2]);
            } else {
                theirs.computeIfAbsent(seed, s -> new ArrayList<>()).add(head[2]);
            }
        }

        List<String> failures = new ArrayList<>();
        refused.forEach(
                (seed, why) ->
                        failures.add("seed " + seed + ": the real #3187 refused the case: " + why));
        long compared = 0;
        for (OracleCase c : cases) {
            if (refused.containsKey(c.seed())) {
                continue;
            }
            String problem = compare(c, theirs.getOrDefault(c.seed(), List.of()));
            if (problem != null) {
                failures.add("seed " + c.seed() + ": " + problem);
            }
            compared++;
        }
        assertThat(failures)
                .as(
                        "cases where our planner and Mooncake #3441 disagree (replay one with"
                                + " -Dmooncake3441.seed=<seed>, base seed "
                                + base
                                + ")")
                .isEmpty();
        assertThat(compared).isGreaterThanOrEqualTo(200);
    }

    /** The first disagreement of one case, or null. */
    private static String compare(OracleCase c, List<String> theirRuns) {
        Plan plan = Planner.plan(c.manifest(), c.placement(), c.topology(), c.options());
        Tagged world = Tagged.run(plan, c.manifest(), c.placement());
        List<String> ours = world.runs(c.placement());
        List<String> theirs = new ArrayList<>(theirRuns);
        ours.sort(null);
        theirs.sort(null);
        if (!ours.equals(theirs)) {
            TreeSet<String> onlyOurs = new TreeSet<>(ours);
            onlyOurs.removeAll(theirs);
            TreeSet<String> onlyTheirs = new TreeSet<>(theirs);
            onlyTheirs.removeAll(ours);
            return "runs differ; only ours: "
                    + first(onlyOurs)
                    + "; only #3441's: "
                    + first(onlyTheirs);
        }
        ValidationReport report = PlanValidator.validate(plan, c.manifest(), c.placement());
        if (!report.problems().isEmpty()) {
            return "our plan does not validate: " + report.problems();
        }
        long demanded = demandedSourceBytes(theirs);
        if (report.readBytes() != demanded || world.storeBytesRead != demanded) {
            return "single-pull: the plan reads "
                    + report.readBytes()
                    + " bytes (executed: "
                    + world.storeBytesRead
                    + "), the targets demand "
                    + demanded
                    + " distinct stored bytes";
        }
        long held = 0;
        for (Worker w : c.placement().workers()) {
            for (TargetFragment f : w.fragments()) {
                held += f.bytes();
            }
        }
        if (report.deliveredBytes() != held) {
            return "delivery: the plan delivers "
                    + report.deliveredBytes()
                    + " bytes, the placement holds "
                    + held;
        }
        return null;
    }

    private static String first(TreeSet<String> lines) {
        return lines.isEmpty() ? "(none)" : lines.first() + " (" + lines.size() + " runs)";
    }

    /** Distinct stored bytes that #3441's runs read: the union of their source intervals. */
    private static long demandedSourceBytes(List<String> runs) {
        Map<String, List<long[]>> byObject = new HashMap<>();
        for (String run : runs) {
            String[] f = run.split(" ");
            long start = Long.parseLong(f[5]);
            byObject.computeIfAbsent(f[4], k -> new ArrayList<>())
                    .add(new long[] {start, start + Long.parseLong(f[6])});
        }
        long total = 0;
        for (List<long[]> intervals : byObject.values()) {
            intervals.sort((a, b) -> Long.compare(a[0], b[0]));
            long end = Long.MIN_VALUE;
            for (long[] iv : intervals) {
                long from = Math.max(iv[0], end);
                if (iv[1] > from) {
                    total += iv[1] - from;
                }
                end = Math.max(end, iv[1]);
            }
        }
        return total;
    }

    private static void runReference(Path in, Path out) throws IOException, InterruptedException {
        String venv = System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
        Path python = Path.of(venv, "bin", "python");
        assertThat(Files.isExecutable(python))
                .as(
                        "the test venv at %s (create it with python/ci-venv.sh; .ci/run does;"
                                + " WEIGHT_RELAY_VENV moves it)",
                        venv)
                .isTrue();
        Path log = out.resolveSibling("reference.log");
        Process process =
                new ProcessBuilder(
                                python.toString(),
                                Path.of("src", "test", "python", "plan_with_mooncake_3441.py")
                                        .toString(),
                                in.toString(),
                                out.toString())
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile())
                        .start();
        boolean done = process.waitFor(120, TimeUnit.SECONDS);
        if (!done) {
            process.destroyForcibly();
        }
        String said = Files.readString(log, StandardCharsets.UTF_8);
        System.out.print(said);
        assertThat(done && process.exitValue() == 0)
                .as("the #3441 reference planner (%s) failed: %s", python, said)
                .isTrue();
    }

    /**
     * Our plan run on tagged bytes: every stored byte holds {@code object index << 32 | offset},
     * every receive buffer starts {@link #UNWRITTEN}; reads, writes and per-batch fan-outs run from
     * the decoded slices, as the loaders run them.
     */
    static final class Tagged extends SliceExecution<long[]> {
        final Map<String, long[]> store = new HashMap<>();
        final List<String> objectKeys = new ArrayList<>();
        final Map<String, long[]> buffers = new HashMap<>();

        static Tagged run(Plan plan, SourceManifest manifest, TargetPlacement placement) {
            Tagged world = new Tagged();
            for (StoredFragment f : manifest.fragments()) {
                long index = world.objectKeys.size();
                world.objectKeys.add(OracleCase.objectKey(f.fragment()));
                long[] object = new long[(int) f.bytes()];
                for (int b = 0; b < object.length; b++) {
                    object[b] = index << 32 | b;
                }
                world.store.put(f.fragment(), object);
            }
            for (Worker w : placement.workers()) {
                long size = 0;
                for (TargetFragment f : w.fragments()) {
                    size = Math.max(size, f.bufferEnd());
                }
                long[] buffer = new long[(int) size];
                Arrays.fill(buffer, UNWRITTEN);
                world.buffers.put(w.id(), buffer);
            }
            world.execute(plan, placement);
            return world;
        }

        @Override
        protected long[] object(String fragment) {
            return store.get(fragment);
        }

        @Override
        protected long[] buffer(String worker, String buffer) {
            assertThat(buffer).isEqualTo(BUFFER);
            return buffers.get(worker);
        }

        @Override
        protected long[] staging(int length) {
            long[] staging = new long[length];
            Arrays.fill(staging, UNWRITTEN);
            return staging;
        }

        /**
         * What each worker's boxes hold, as the reference script prints it: {@code worker tensor
         * box-offset byte-in-box object-key object-offset length}, maximal runs.
         */
        List<String> runs(TargetPlacement placement) {
            List<String> out = new ArrayList<>();
            for (Worker w : placement.workers()) {
                long[] buffer = buffers.get(w.id());
                for (TargetFragment f : w.fragments()) {
                    String box =
                            w.id()
                                    + " "
                                    + f.tensor()
                                    + " "
                                    + Arrays.stream(f.offset().dims())
                                            .mapToObj(Long::toString)
                                            .reduce((a, b) -> a + "," + b)
                                            .orElse("");
                    int elt = f.dtype().bytes();
                    long[] idx = new long[f.shape().rank()];
                    long runStart = 0;
                    long runTag = UNWRITTEN;
                    long runLength = 0;
                    for (long i = 0; i < f.bytes(); i++) {
                        ByteWorld.unravel(i / elt, f.shape().dims(), idx);
                        long at = f.bufferOffset() + i % elt;
                        for (int d = 0; d < idx.length; d++) {
                            at += idx[d] * f.strides().dim(d);
                        }
                        long tag = buffer[(int) at];
                        if (runLength > 0 && tag != UNWRITTEN && tag == runTag + runLength) {
                            runLength++;
                            continue;
                        }
                        if (runLength > 0) {
                            out.add(line(box, runStart, runTag, runLength));
                        }
                        runStart = i;
                        runTag = tag;
                        runLength = 1;
                    }
                    if (runLength > 0) {
                        out.add(line(box, runStart, runTag, runLength));
                    }
                }
            }
            return out;
        }

        private String line(String box, long start, long tag, long length) {
            String source =
                    tag == UNWRITTEN
                            ? "UNWRITTEN 0"
                            : objectKeys.get((int) (tag >>> 32)) + " " + (tag & 0xFFFFFFFFL);
            return box + " " + start + " " + source + " " + length;
        }
    }
}
