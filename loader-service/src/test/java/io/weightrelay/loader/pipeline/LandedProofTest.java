package io.weightrelay.loader.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The catalog's {@code tiny} model on two nodes, four instances of tp 2: every instance's reads are
 * executed by their plan into heap buffers standing in for the workers' segments (checked byte by
 * byte by {@link BufferVerifier}), then what every sender says it sent must match what every
 * receiver holds, and a byte changed in one receiver's buffer after it landed must be found, naming
 * the receiver, its buffer and the sender.
 */
class LandedProofTest {
    private static final GenerationContent CONTENT = new GenerationContent(11, 3);

    private record Applied(
            Cluster cluster,
            BufferDirectory directory,
            Map<String, ByteBuffer> segments,
            Map<String, SliceSchedule> schedules,
            Map<LandedProof.Key, LandedProof.Digest> sent) {

        ByteBuffer view(String worker, String buffer) {
            BufferDirectory.Placed p = directory.require(worker, buffer);
            return segments.get(p.segment()).slice((int) p.base(), (int) p.size());
        }

        List<LandedProof.Mismatch> check(String instance) {
            SliceSchedule s = schedules.get(instance);
            return LandedProof.compare(
                    sent, LandedProof.landed(s, this::view), cluster.workersOf(instance));
        }
    }

    private static Applied apply(Mode mode) {
        Cluster c = Cluster.tiny(2, 4, mode);
        BufferDirectory directory = new BufferDirectory(c.buffers());
        Map<String, ByteBuffer> segments = new HashMap<>();
        directory
                .segmentSizes()
                .forEach((name, size) -> segments.put(name, ByteBuffer.allocate(size.intValue())));
        Map<String, StoredFragment> fragments = new HashMap<>();
        c.manifest().fragments().forEach(f -> fragments.put(f.fragment(), f));
        Map<String, Integer> tensors = c.manifest().tensorIndex();
        Map<String, SliceSchedule> schedules = new HashMap<>();
        Map<LandedProof.Key, LandedProof.Digest> sent = new HashMap<>();
        Applied a = new Applied(c, directory, segments, schedules, sent);
        for (String instance : c.instances()) {
            SliceSchedule s = new SliceSchedule(Slice.of(c.plan(), instance), directory);
            schedules.put(instance, s);
            Slice plan = s.plan();
            LandedProof.Read span =
                    read -> {
                        StoredFragment f = fragments.get(plan.objectId(plan.readObject(read)));
                        ByteBuffer out = ByteBuffer.allocate((int) plan.readSpan(read));
                        CONTENT.fill(
                                tensors.get(f.tensor()),
                                GenerationContent.tensorIndexOf(c.manifest(), f)
                                        + plan.readStart(read),
                                out);
                        return out.clear();
                    };
            // the writes as the plan says they land, relayed and fanned-out copies included
            for (int batch = 0; batch < plan.batchCount(); batch++) {
                for (int read : s.reads(batch)) {
                    ByteBuffer bytes = span.of(read);
                    for (int w = plan.writeFirst(read); w < plan.writeEnd(read); w++) {
                        int dst = plan.writeDst(w);
                        List<Integer> to =
                                (plan.writeFlags(w) & Plan.FANOUT) != 0
                                                && plan.workerMode(dst) == Mode.COMPAT
                                        ? s.compatWorkersBeside(dst)
                                        : List.of(dst);
                        String buffer = plan.buffer(plan.writeBuffer(w));
                        for (int worker : to) {
                            ByteBuffer into = a.view(plan.workerId(worker), buffer);
                            Runs.forEach(
                                    plan,
                                    w,
                                    (src, d, length) ->
                                            into.put((int) d, bytes, (int) src, (int) length));
                        }
                    }
                }
            }
            LandedProof.sent(s, span)
                    .forEach(
                            (k, d) ->
                                    sent.merge(
                                            k,
                                            d,
                                            (x, y) ->
                                                    new LandedProof.Digest(
                                                            x.sum() + y.sum(),
                                                            x.bytes() + y.bytes())));
        }
        byte[] header = SafetensorsLayout.of(c.manifest()).headerBytes();
        BufferVerifier verifier = new BufferVerifier(c.manifest(), CONTENT);
        for (Worker w : c.placement().workers()) {
            if (w.mode() == Mode.COMPAT) {
                a.view(w.id(), Worker.COMPAT_BUFFER).put(0, header);
            }
            verifier.verify(w, directory, segments::get);
        }
        return a;
    }

    @ParameterizedTest
    @EnumSource(Mode.class)
    void whatLandedIsWhatWasSent(Mode mode) {
        Applied a = apply(mode);
        long proven = 0;
        long received = 0;
        for (String instance : a.cluster().instances()) {
            received += a.schedules().get(instance).receiveBytes();
            assertThat(a.check(instance)).as(instance).isEmpty();
            proven +=
                    LandedProof.landed(a.schedules().get(instance), a::view).values().stream()
                            .mapToLong(LandedProof.Digest::bytes)
                            .sum();
        }
        assertThat(proven).isPositive().isEqualTo(received);
    }

    @ParameterizedTest
    @EnumSource(Mode.class)
    void aByteChangedAfterItLandedNamesTheReceiverItsBufferAndTheSender(Mode mode) {
        Applied a = apply(mode);
        // the last write an instance's workers receive into their own buffers (in compat mode a
        // node delegate's, which it fans out)
        String instance = null;
        SliceSchedule s = null;
        int v = -1;
        for (String i : a.cluster().instances()) {
            SliceSchedule candidate = a.schedules().get(i);
            for (int r = 0; r < candidate.plan().receiveCount(); r++) {
                if (candidate.myWorkers().contains(candidate.plan().receiveDst(r))) {
                    instance = i;
                    s = candidate;
                    v = r;
                }
            }
        }
        Slice plan = s.plan();
        String worker = plan.workerId(plan.receiveDst(v));
        String buffer = plan.buffer(plan.receiveBuffer(v));
        String sender = plan.workerInstance(plan.receiveFrom(v));
        ByteBuffer view = a.view(worker, buffer);
        int at = (int) plan.receiveDstOffset(v);
        view.put(at, (byte) (view.get(at) ^ 0x10));

        List<LandedProof.Mismatch> found = a.check(instance);

        assertThat(found).hasSize(1);
        assertThat(found.get(0).key()).isEqualTo(new LandedProof.Key(sender, worker, buffer));
        assertThat(found.get(0).describe())
                .contains(worker)
                .contains("'" + buffer + "'")
                .contains(sender + " sent");
        for (String other : a.cluster().instances()) {
            if (!other.equals(instance)) {
                assertThat(a.check(other)).as(other).isEmpty();
            }
        }
    }

    /**
     * Issue 47: a node delegate's loader copied a received write to its peer before the write's
     * bytes had landed in the delegate. The copier reports what it copied, so the copy matches its
     * own report and the delegate matches the original writer's: the digests pass. The copy must
     * still hold what its source holds.
     */
    @ParameterizedTest
    @EnumSource(Mode.class)
    void aCopyTakenBeforeItsSourceLandedIsFoundThoughItMatchesWhatItsCopierReported(Mode mode) {
        Applied a = apply(mode);
        for (String i : a.cluster().instances()) {
            assertThat(LandedProof.copiesUnlikeTheirSource(a.schedules().get(i), bytes(a)))
                    .as(i)
                    .isEmpty();
        }
        String instance = null;
        SliceSchedule s = null;
        int v = -1;
        int to = -1;
        for (String i : a.cluster().instances()) {
            SliceSchedule candidate = a.schedules().get(i);
            for (int r = 0; r < candidate.plan().receiveCount() && v < 0; r++) {
                int source = candidate.copySource(r);
                for (int t : candidate.copyTargets(r)) {
                    if (t != source
                            && candidate.myWorkers().contains(t)
                            && candidate.myWorkers().contains(source)) {
                        instance = i;
                        s = candidate;
                        v = r;
                        to = t;
                        break;
                    }
                }
            }
        }
        assertThat(v).as("a copy between two workers of one instance").isNotNegative();
        Slice plan = s.plan();
        String worker = plan.workerId(to);
        String buffer = plan.buffer(plan.receiveBuffer(v));
        String copier = plan.workerInstance(s.copySource(v));
        // the copy holds what its source held before the write landed (here: zeros), and that is
        // what its copier reported sending
        ByteBuffer view = a.view(worker, buffer);
        int at = (int) plan.receiveDstOffset(v);
        for (int b = 0; b < plan.receiveBytes(v); b++) {
            view.put(at + b, (byte) 0);
        }
        LandedProof.Key key = new LandedProof.Key(copier, worker, buffer);
        a.sent().put(key, LandedProof.landed(s, a::view).get(key));

        assertThat(a.check(instance)).as("the digests alone").isEmpty();
        List<LandedProof.CopyMismatch> found = LandedProof.copiesUnlikeTheirSource(s, bytes(a));

        assertThat(found).hasSize(1);
        assertThat(found.get(0).copier()).isEqualTo(copier);
        assertThat(found.get(0).worker()).isEqualTo(worker);
        assertThat(found.get(0).describe())
                .contains("'" + buffer + "'")
                .contains(worker)
                .contains(plan.workerId(s.copySource(v)));
    }

    private static LandedProof.Bytes bytes(Applied a) {
        return (worker, buffer, offset, length) ->
                a.view(worker, buffer).slice((int) offset, (int) length);
    }
}
