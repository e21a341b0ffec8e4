package io.weightrelay.loader.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.ObjectVerification;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.process.ChildJvm;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Four loaders in four JVMs (two instances on each of two rollout node labels, tp 2) apply a
 * published generation of the catalog's {@code tiny} model over the real data plane and Redis; the
 * test plays the publisher (its own node label) and the barriers. Every received byte is checked,
 * and the engines' counters prove single-pull and the compat fan-out bound.
 */
class MultiProcessApplyTest {
    private static final long SEED = 7;
    private static final int SLOTS = 3;

    @TempDir Path dir;

    private String prefix;
    private Dataplane trainer;
    private Segment store;
    private final List<ChildJvm> loaders = new ArrayList<>();

    /** Every object as it was stored: its size and CRC32C. */
    private final Map<String, ObjectVerification.Registered> published = new HashMap<>();

    @BeforeEach
    void publisher() {
        prefix = RedisTestSupport.uniqueKeyPrefix("loader-apply");
        trainer = TestDataplane.open("trainer-0", prefix);
        store = trainer.createSegment("publisher-trainer-0", 24L << 20);
    }

    @AfterEach
    void stop() throws Exception {
        for (ChildJvm p : loaders) {
            p.close();
        }
        trainer.close();
        RedisTestSupport.deleteKeys(prefix);
    }

    private Cluster cluster(Mode mode) {
        return Cluster.tiny(2, 4, mode);
    }

    private void publish(SourceManifest manifest, long generation) {
        GenerationContent content = new GenerationContent(SEED, generation);
        Map<String, Integer> tensors = manifest.tensorIndex();
        long max = manifest.fragments().stream().mapToLong(StoredFragment::bytes).max().orElse(1);
        // The publisher's staging is a source, not store capacity: a receive segment.
        try (Segment staging = trainer.createReceiveSegment("publish-staging-" + generation, max)) {
            for (StoredFragment f : manifest.fragments()) {
                if (f.bytes() == 0) {
                    continue;
                }
                ByteBuffer view = staging.byteBuffer(0, (int) f.bytes());
                content.fill(
                        tensors.get(f.tensor()),
                        GenerationContent.tensorIndexOf(manifest, f),
                        view);
                published.put(
                        f.fragment(),
                        new ObjectVerification.Registered(
                                f.bytes(), Crc32c.of(staging.byteBuffer(0, (int) f.bytes()))));
                trainer.store()
                        .putFrom(
                                new GenerationId(manifest.model(), generation)
                                        .objectKey(f.fragment()),
                                staging,
                                0,
                                f.bytes(),
                                ReplicateConfig.preferLocal(store.name()));
            }
        }
    }

    private void startLoaders(Cluster c, int timeoutSeconds, String failing, int failAt)
            throws Exception {
        Files.write(dir.resolve("manifest.bin"), c.manifest().encode());
        Files.write(dir.resolve("placement.bin"), c.placement().encode());
        Files.write(dir.resolve("plan.bin"), c.plan().encode());
        for (String instance : c.instances()) {
            loaders.add(
                    LoaderProcess.start(
                            RedisTestSupport.endpoint().uri(),
                            prefix,
                            dir,
                            instance,
                            c.nodeOf(instance),
                            1,
                            SLOTS,
                            timeoutSeconds,
                            instance.equals(failing) ? failAt : -1));
        }
    }

    /** Sends the command to every loader at once and collects the replies in order. */
    private List<String> all(String command) {
        loaders.forEach(l -> l.send(command));
        List<String> replies = new ArrayList<>();
        for (ChildJvm l : loaders) {
            replies.add(l.reply());
        }
        return replies;
    }

    private Map<String, RangeChecksums> checksums(Cluster c) {
        List<String> replies = all("checksums");
        Map<String, RangeChecksums> out = new HashMap<>();
        for (int i = 0; i < replies.size(); i++) {
            assertThat(replies.get(i)).startsWith("OK ");
            out.put(
                    c.instances().get(i),
                    RangeChecksums.decode(
                            java.util.Base64.getDecoder().decode(replies.get(i).substring(3))));
        }
        return out;
    }

    /**
     * Publishes generation 1, starts a loader per instance (120 s to apply, no failure injected),
     * and checks that every one prepares and applies it; returns the apply replies.
     */
    private List<String> applyFirstGeneration(Cluster c) throws Exception {
        publish(c.manifest(), 1);
        startLoaders(c, 120, null, -1);
        assertThat(all("prepare 1")).allMatch(r -> r.startsWith("OK prepared"));
        List<String> applied = all("apply");
        assertThat(applied).allMatch(r -> r.startsWith("OK "));
        return applied;
    }

    private static long[] longs(String okReply) {
        String[] parts = okReply.substring(3).split(" ");
        long[] out = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = Long.parseLong(parts[i]);
        }
        return out;
    }

    @ParameterizedTest
    @EnumSource(Mode.class)
    void everyByteArrivesAndEachStoredByteIsReadOnce(Mode mode) throws Exception {
        Cluster c = cluster(mode);
        List<String> applied = applyFirstGeneration(c);

        Plan plan = c.plan();
        long planRead = 0;
        long crossNode = 0;
        Map<Integer, Integer> crossSendsPerTensor = new HashMap<>();
        for (int i = 0; i < plan.readCount(); i++) {
            planRead += plan.readBytes(i);
            int readerNode = plan.workerNode(plan.readReader(i));
            for (int w = plan.writeFirst(i); w < plan.writeEnd(i); w++) {
                // a relayed write is its delegate's copy on the destination's node
                if (plan.workerNode(plan.writeDst(w)) != readerNode
                        && (plan.writeFlags(w) & Plan.RELAYED) == 0) {
                    crossNode += plan.writeBytes(w);
                    crossSendsPerTensor.merge(
                            plan.objectTensor(plan.readObject(i)), 1, Integer::sum);
                }
            }
        }
        long read = 0;
        long storeRead = 0;
        long tcpWritten = 0;
        long sentByWrites = 0;
        long summed = 0;
        long twinned = 0;
        for (String r : applied) {
            long[] v = longs(r);
            read += v[0];
            storeRead += v[4] + v[6];
            tcpWritten += v[7];
            sentByWrites += v[1] + v[2];
            summed += v[8];
            twinned += v[9];
        }
        // Every byte a loader wrote is either summed as it moved or a twin of a summed transfer
        // of the same source bytes: the same staging range to several instances (and, in compat
        // mode, a delegate's copies to its node peers) is summed once.
        assertThat(summed + twinned).isEqualTo(sentByWrites);
        assertThat(twinned).isPositive();
        // Single pull: the store bytes read equal the bytes the target needs, all of the model
        // here.
        assertThat(planRead).isEqualTo(c.manifest().totalBytes());
        assertThat(read).isEqualTo(planRead);
        assertThat(storeRead).isEqualTo(planRead);
        assertThat(tcpWritten).isEqualTo(crossNode);
        if (mode == Mode.COMPAT) {
            // Per tensor, at most nodes - 1 = 1 send crosses nodes per stored fragment read.
            Map<Integer, Integer> readsPerTensor = new HashMap<>();
            for (int i = 0; i < plan.readCount(); i++) {
                readsPerTensor.merge(plan.objectTensor(plan.readObject(i)), 1, Integer::sum);
            }
            crossSendsPerTensor.forEach(
                    (t, sends) -> assertThat(sends).isLessThanOrEqualTo(readsPerTensor.get(t)));
        }
        // Each node takes in each stored byte at most once, in parameter-direct mode too (the
        // same shard for two instances of a node crosses once and is relayed there).
        assertThat(tcpWritten).isLessThanOrEqualTo(c.manifest().totalBytes());

        List<String> verified = all("verify " + SEED);
        assertThat(verified).allMatch(r -> r.startsWith("OK "));
        long checked = verified.stream().mapToLong(r -> longs(r)[0]).sum();
        assertThat(checked).isPositive();

        // What each reader checksummed as it read, combined per object across the loaders,
        // proves every object read against the checksum it had when it was stored.
        Map<String, RangeChecksums> reports = checksums(c);
        ObjectVerification.Result proof =
                ObjectVerification.verify(reports, published, ObjectVerification.expected(plan));
        assertThat(proof.ok()).as(String.valueOf(proof.failure())).isTrue();
        assertThat(proof.partialObjects()).isZero();
        assertThat(proof.verifiedBytes()).isEqualTo(c.manifest().totalBytes());
        // One flipped bit in what one loader read fails its object, naming the loaders.
        String someone = c.instances().get(0);
        RangeChecksums mine = reports.get(someone);
        RangeChecksums.Entry first = mine.entries().get(0);
        List<RangeChecksums.Entry> flipped = new ArrayList<>(mine.entries());
        flipped.set(
                0,
                new RangeChecksums.Entry(
                        first.object(), first.offset(), first.length(), first.crc() ^ 1));
        Map<String, RangeChecksums> tampered = new HashMap<>(reports);
        tampered.put(someone, new RangeChecksums(flipped));
        ObjectVerification.Result refused =
                ObjectVerification.verify(tampered, published, ObjectVerification.expected(plan));
        assertThat(refused.ok()).isFalse();
        assertThat(refused.failure().object()).isEqualTo(first.object());
        assertThat(refused.failure().readers()).contains(someone);

        assertThat(all("promote")).allMatch(r -> r.startsWith("OK "));
        List<String> firstStats = all("stats");
        // The next generation reuses every registration and is again checked byte for byte. Its
        // store reads start ahead of the apply, as while the others prepare: until the apply
        // runs, every worker still holds generation 1, and the apply reads each byte once.
        publish(c.manifest(), 2);
        assertThat(all("prepare 2")).allMatch(r -> r.startsWith("OK prepared"));
        List<String> ahead = all("read-ahead");
        assertThat(ahead).allMatch(r -> r.startsWith("OK "));
        assertThat(ahead.stream().mapToLong(r -> longs(r)[0]).sum()).isPositive();
        assertThat(all("verify " + SEED + " 1")).allMatch(r -> r.startsWith("OK "));
        List<String> second = all("apply");
        assertThat(second).allMatch(r -> r.startsWith("OK "));
        assertThat(second.stream().mapToLong(r -> longs(r)[0]).sum()).isEqualTo(planRead);
        assertThat(second.stream().mapToLong(r -> longs(r)[4] + longs(r)[6]).sum())
                .isEqualTo(planRead);
        assertThat(all("verify " + SEED)).allMatch(r -> r.startsWith("OK "));
        List<String> secondStats = all("stats");
        for (int i = 0; i < loaders.size(); i++) {
            String registered = firstStats.get(i).replaceAll(".*registered=(\\d+).*", "$1");
            assertThat(secondStats.get(i))
                    .contains("registered=" + registered + ",")
                    .doesNotContain("reused=0,");
        }
    }

    /**
     * One instance alone on its node (a rebuild group): one reader reads whole neighbouring pieces
     * of a tensor, so consecutive writes of a batch go to contiguous offsets of the same buffer.
     * Each must land at its own offset, not at the first one's.
     */
    @ParameterizedTest
    @EnumSource(Mode.class)
    void anInstanceAloneOnItsNodeReceivesEveryByte(Mode mode) throws Exception {
        Cluster c = Cluster.tiny(1, 1, mode);
        applyFirstGeneration(c);
        assertThat(all("verify " + SEED)).allMatch(r -> r.startsWith("OK "));
    }

    /**
     * What each loader wrote into each instance's buffers, as its data plane summed the bytes it
     * moved (the test plays control-api, which hands every receiver what was sent to it): every
     * receiver's buffers prove it, every received byte read once. A byte changed in a receiver's
     * buffer after it landed (one another loader wrote there) fails that receiver's proof, naming
     * the sender, the receiving worker, its buffer and the generation; every other receiver still
     * proves its own.
     */
    @ParameterizedTest
    @EnumSource(Mode.class)
    void aByteChangedInAReceiversBufferAfterItLandedFailsItsProofNamingTheSender(Mode mode)
            throws Exception {
        Cluster c = cluster(mode);
        List<String> applied = applyFirstGeneration(c);
        List<String> instances = c.instances();
        // receiver -> "sender=base64,...": what the SENT reports would hand each receiver
        Map<String, List<String>> toReceiver = new HashMap<>();
        List<String> sent = all("sent");
        for (int i = 0; i < sent.size(); i++) {
            assertThat(sent.get(i)).startsWith("OK");
            if (sent.get(i).length() <= 3) {
                continue;
            }
            for (String pair : sent.get(i).substring(3).split(",")) {
                int eq = pair.indexOf('=');
                toReceiver
                        .computeIfAbsent(pair.substring(0, eq), k -> new ArrayList<>())
                        .add(instances.get(i) + pair.substring(eq));
            }
        }
        List<String> proofs = prove(instances, toReceiver);
        assertThat(proofs).allMatch(r -> r.startsWith("OK "));
        long received = applied.stream().mapToLong(r -> longs(r)[3]).sum();
        assertThat(proofs.stream().mapToLong(r -> longs(r)[0]).sum())
                .isPositive()
                .isEqualTo(received);

        // One receiver's buffer changes after the bytes landed: its proof fails, naming the
        // loader that wrote them, the worker, the buffer and the generation.
        int victim = 0;
        while (!receivesFromAnother(c, instances.get(victim))) {
            victim++;
        }
        String receiver = instances.get(victim);
        assertThat(loaders.get(victim).ok("flip")).isEqualTo("flip");
        proofs = prove(instances, toReceiver);
        String failed = proofs.get(victim);
        assertThat(failed).startsWith("ERR ");
        String sender = failed.split(" ")[1];
        assertThat(instances).contains(sender);
        assertThat(sender).isNotEqualTo(receiver);
        assertThat(failed)
                .contains("generation 1 of tiny did not land as sent")
                .contains("of " + receiver + "-")
                .contains("buffer '")
                .contains(sender + " sent into it");
        for (int i = 0; i < instances.size(); i++) {
            if (i != victim) {
                assertThat(proofs.get(i)).as(instances.get(i)).startsWith("OK ");
            }
        }
    }

    /** Whether another instance's loader writes into {@code instance}'s workers' buffers. */
    /**
     * Every loader proves its buffers against what the others sent it ({@code toReceiver}: per
     * receiving instance, its {@code sender=digests} pairs), all at once; the answers in loader
     * order.
     */
    private List<String> prove(List<String> instances, Map<String, List<String>> toReceiver) {
        for (int i = 0; i < instances.size(); i++) {
            loaders.get(i)
                    .send(
                            "prove "
                                    + String.join(
                                            ",",
                                            toReceiver.getOrDefault(instances.get(i), List.of())));
        }
        List<String> proofs = new ArrayList<>();
        for (ChildJvm l : loaders) {
            proofs.add(l.reply());
        }
        return proofs;
    }

    private static boolean receivesFromAnother(Cluster c, String instance) {
        io.weightrelay.reshard.plan.Slice s =
                io.weightrelay.reshard.plan.Slice.of(c.plan(), instance);
        for (int v = 0; v < s.receiveCount(); v++) {
            if (s.workerInstance(s.receiveDst(v)).equals(instance)
                    && !s.workerInstance(s.receiveFrom(v)).equals(instance)
                    && s.receiveBytes(v) > 0) {
                return true;
            }
        }
        return false;
    }

    @ParameterizedTest
    @EnumSource(Mode.class)
    void aMissingObjectFailsPrepareAndLeavesTheOldGenerationUntouched(Mode mode) throws Exception {
        Cluster c = cluster(mode);
        applyFirstGeneration(c);
        assertThat(all("promote")).allMatch(r -> r.startsWith("OK "));

        publish(c.manifest(), 2);
        StoredFragment lost = c.manifest().fragments().get(3);
        String lostKey = new GenerationId("tiny", 2).objectKey(lost.fragment());
        assertThat(trainer.store().remove(lostKey)).isTrue();

        List<String> prepared = all("prepare 2");
        assertThat(prepared).anyMatch(r -> r.startsWith("ERR " + lostKey + " "));
        // Those that prepared start their reads ahead; the test plays the failed all-prepared
        // barrier: they stop them, everyone discards and resumes.
        List<String> ahead = all("read-ahead");
        for (int i = 0; i < loaders.size(); i++) {
            assertThat(ahead.get(i))
                    .startsWith(
                            prepared.get(i).startsWith("OK prepared")
                                    ? "OK "
                                    : "ERR - nothing prepared");
        }
        assertThat(all("abandon")).allMatch(r -> r.equals("OK abandoned"));
        all("discard");
        assertThat(all("verify " + SEED + " 1")).allMatch(r -> r.startsWith("OK "));
    }

    @ParameterizedTest
    @EnumSource(Mode.class)
    void aFailureDuringApplyIsNamedAndNothingIsRetried(Mode mode) throws Exception {
        Cluster c = cluster(mode);
        publish(c.manifest(), 1);
        String failing = c.plan().workerInstance(c.plan().readReader(0));
        startLoaders(c, 8, failing, 0);
        assertThat(all("prepare 1")).allMatch(r -> r.startsWith("OK prepared"));
        List<String> applied = all("apply");
        int index = c.instances().indexOf(failing);
        assertThat(applied.get(index)).startsWith("ERR " + failing + " ").contains("injected");
        // Every other loader either finished its own part or names the failed one.
        assertThat(applied)
                .allMatch(r -> r.startsWith("OK ") || r.startsWith("ERR " + failing + " "));
    }
}
