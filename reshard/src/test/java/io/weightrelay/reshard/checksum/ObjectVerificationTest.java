package io.weightrelay.reshard.checksum;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.checksum.ObjectVerification.ExpectedRange;
import io.weightrelay.reshard.checksum.ObjectVerification.Registered;
import io.weightrelay.reshard.checksum.ObjectVerification.Result;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ObjectVerificationTest {

    private final Random random = new Random(14);
    private final Map<String, byte[]> objects = new HashMap<>();
    private final Map<String, Registered> registered = new HashMap<>();

    private void object(String id, int size) {
        byte[] bytes = new byte[size];
        random.nextBytes(bytes);
        objects.put(id, bytes);
        registered.put(id, new Registered(size, Crc32c.of(bytes, 0, size)));
    }

    private RangeChecksums.Entry range(String id, int offset, int length) {
        return new RangeChecksums.Entry(
                id, offset, length, Crc32c.of(objects.get(id), offset, length));
    }

    /** Two objects, the first split between two readers, the second read whole by one. */
    private Map<String, List<RangeChecksums.Entry>> split() {
        object("w@0", 10_000);
        object("w@1", 4_096);
        Map<String, List<RangeChecksums.Entry>> byReader = new HashMap<>();
        byReader.put("loader-a", new ArrayList<>(List.of(range("w@0", 0, 3_000))));
        byReader.put(
                "loader-b",
                new ArrayList<>(List.of(range("w@0", 3_000, 7_000), range("w@1", 0, 4_096))));
        return byReader;
    }

    private static Map<String, RangeChecksums> reports(
            Map<String, List<RangeChecksums.Entry>> byReader) {
        Map<String, RangeChecksums> reports = new HashMap<>();
        // Through the wire encoding, as control-api receives them.
        byReader.forEach(
                (reader, entries) ->
                        reports.put(
                                reader,
                                RangeChecksums.decode(new RangeChecksums(entries).encode())));
        return reports;
    }

    private static Map<String, List<ExpectedRange>> plan() {
        return Map.of(
                "w@0",
                List.of(
                        new ExpectedRange(0, 3_000, "loader-a"),
                        new ExpectedRange(3_000, 7_000, "loader-b")),
                "w@1",
                List.of(new ExpectedRange(0, 4_096, "loader-b")));
    }

    @Test
    void rangesOfSeveralReadersCombineIntoEachObjectsChecksum() {
        Result result = ObjectVerification.verify(reports(split()), registered, plan());
        assertThat(result.ok()).isTrue();
        assertThat(result.verifiedObjects()).isEqualTo(2);
        assertThat(result.partialObjects()).isZero();
        assertThat(result.verifiedBytes()).isEqualTo(14_096);
    }

    @Test
    void oneFlippedByteFailsItsObjectNamingTheReaders() {
        Map<String, List<RangeChecksums.Entry>> byReader = split();
        objects.get("w@0")[5_000] ^= 0x10; // what loader-b read is not what was published
        byReader.get("loader-b").set(0, range("w@0", 3_000, 7_000));
        Result result = ObjectVerification.verify(reports(byReader), registered, plan());
        assertThat(result.ok()).isFalse();
        assertThat(result.failure().object()).isEqualTo("w@0");
        assertThat(result.failure().readers()).containsExactly("loader-a", "loader-b");
        assertThat(result.failure().message())
                .contains("w@0", "does not match its registered checksum");
        assertThat(result.failure().corrupt()).isTrue();
    }

    @Test
    void aRangeThePlanReadsButNobodyReportedFailsNamingItsReader() {
        Map<String, List<RangeChecksums.Entry>> byReader = split();
        byReader.get("loader-a").clear();
        Result result = ObjectVerification.verify(reports(byReader), registered, plan());
        assertThat(result.failure().object()).isEqualTo("w@0");
        assertThat(result.failure().readers()).containsExactly("loader-a");
        assertThat(result.failure().message()).contains("reported no checksum of [0, 3000)");
        assertThat(result.failure().corrupt()).isFalse();
    }

    @Test
    void aRangeReportedByAnotherLoaderThanItsReaderFails() {
        Map<String, List<RangeChecksums.Entry>> byReader = split();
        byReader.get("loader-b").add(byReader.get("loader-a").remove(0));
        Result result = ObjectVerification.verify(reports(byReader), registered, plan());
        assertThat(result.failure().object()).isEqualTo("w@0");
        assertThat(result.failure().message()).contains("loader-a", "reported no checksum");
    }

    @Test
    void overlapsAndUnknownObjectsFailWithoutAPlanToo() {
        Map<String, List<RangeChecksums.Entry>> byReader = split();
        byReader.get("loader-a").add(range("w@0", 2_000, 2_000));
        assertThat(ObjectVerification.verify(reports(byReader), registered, null).failure())
                .satisfies(f -> assertThat(f.message()).contains("w@0", "read twice"));

        Map<String, List<RangeChecksums.Entry>> unknown = split();
        object("other@0", 10);
        unknown.get("loader-a").add(range("other@0", 0, 10));
        registered.remove("other@0");
        assertThat(ObjectVerification.verify(reports(unknown), registered, null).failure())
                .satisfies(f -> assertThat(f.object()).isEqualTo("other@0"));
    }

    @Test
    void anObjectThePlanReadsInPartIsCountedNotProven() {
        object("w@0", 10_000);
        Map<String, List<RangeChecksums.Entry>> byReader =
                Map.of("loader-a", List.of(range("w@0", 0, 3_000), range("w@0", 6_000, 1_000)));
        Map<String, List<ExpectedRange>> plan =
                Map.of(
                        "w@0",
                        List.of(
                                new ExpectedRange(0, 3_000, "loader-a"),
                                new ExpectedRange(6_000, 1_000, "loader-a")));
        Result result = ObjectVerification.verify(reports(byReader), registered, plan);
        assertThat(result.ok()).isTrue();
        assertThat(result.partialObjects()).isEqualTo(1);
        assertThat(result.verifiedObjects()).isZero();
    }

    @Test
    void theEncodingRoundTripsAndRefusesGarbage() {
        Map<String, List<RangeChecksums.Entry>> byReader = split();
        RangeChecksums b = new RangeChecksums(byReader.get("loader-b"));
        assertThat(RangeChecksums.decode(b.encode()).entries())
                .containsExactlyInAnyOrderElementsOf(b.entries());
        byte[] bytes = b.encode();
        byte[] truncated = java.util.Arrays.copyOf(bytes, bytes.length - 1);
        assertThatThrownBy(() -> RangeChecksums.decode(truncated))
                .isInstanceOf(CodecException.class);
        assertThatThrownBy(() -> RangeChecksums.decode(new byte[] {3, 'a', 'b', 'c'}))
                .isInstanceOf(CodecException.class);
    }

    /**
     * The compact encoding control-api keeps per plan gives back exactly the ranges the plan reads,
     * on a plan where objects are split between readers and some bytes are never read.
     */
    @Test
    void theEncodedExpectedRangesAreThePlansRanges() {
        List<TensorSpec> specs = new ArrayList<>();
        for (int t = 0; t < 6; t++) {
            specs.add(new TensorSpec("t" + t, Shape.of(64, 48), DType.BF16, DType.BF16));
        }
        SourceManifest manifest = Fragmenter.fragment("m", specs, 2_048);
        List<Worker> workers = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            List<TargetFragment> fragments = new ArrayList<>();
            for (TensorSpec t : specs) {
                // each worker holds a quarter of the rows; worker 3 skips every other tensor
                if (w == 3 && t.name().hashCode() % 2 == 0) {
                    continue;
                }
                fragments.add(
                        TargetFragment.dense(
                                t.name(),
                                DType.BF16,
                                t.shape(),
                                Shape.of(w * 16L, 0),
                                Shape.of(16, 48),
                                t.name(),
                                0));
            }
            workers.add(
                    new Worker(
                            "w" + w,
                            "i" + (w / 2),
                            Topology.rolloutNodeName(w / 2),
                            w % 2,
                            1,
                            Mode.DIRECT,
                            "seg" + w,
                            fragments));
        }
        Plan plan =
                Planner.plan(
                        manifest, new TargetPlacement(workers), Topology.uniform(1, 2, 2, 100));

        Map<String, List<ExpectedRange>> expected = ObjectVerification.expected(plan);
        byte[] encoded = ObjectVerification.encodeExpected(plan);

        assertThat(expected.values().stream().mapToInt(List::size).sum()).isGreaterThan(6);
        assertThat(ObjectVerification.decodeExpected(encoded)).isEqualTo(expected);
        assertThat(encoded.length).isLessThan(plan.encode().length);
        assertThatThrownBy(
                        () ->
                                ObjectVerification.decodeExpected(
                                        Arrays.copyOf(encoded, encoded.length - 1)))
                .isInstanceOf(CodecException.class);
    }

    @Test
    void withSeveralFailuresTheFirstByNameIsReportedWhateverTheOrderChecked() {
        // Enough objects that a hash map's order is not their names' order.
        Map<String, List<RangeChecksums.Entry>> byReader = new HashMap<>();
        List<RangeChecksums.Entry> entries = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            String id = String.format("t%03d@0", i);
            object(id, 64);
            entries.add(range(id, 0, 64));
        }
        // t150 comes back corrupt, t042 was read only in part by a reader the plan has not.
        entries.set(150, new RangeChecksums.Entry("t150@0", 0, 64, 7));
        entries.set(42, range("t042@0", 0, 32));
        byReader.put("loader-a", entries);
        Map<String, List<ExpectedRange>> want = new HashMap<>();
        for (int i = 0; i < 200; i++) {
            want.put(String.format("t%03d@0", i), List.of(new ExpectedRange(0, 64, "loader-a")));
        }

        Result planned = ObjectVerification.verify(reports(byReader), registered, want);
        assertThat(planned.ok()).isFalse();
        assertThat(planned.failure().object()).isEqualTo("t042@0");
        assertThat(planned.failure().corrupt()).isFalse();
        // A failure against the plan counts what was verified before it, by name.
        assertThat(planned.verifiedObjects()).isEqualTo(42);
        assertThat(planned.verifiedBytes()).isEqualTo(42 * 64L);

        // Without the plan, t042 is only partial: t150's corruption is the failure.
        Result unplanned = ObjectVerification.verify(reports(byReader), registered, null);
        assertThat(unplanned.failure().object()).isEqualTo("t150@0");
        assertThat(unplanned.failure().corrupt()).isTrue();
        assertThat(unplanned.failure().readers()).containsExactly("loader-a");
    }
}
