package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.registration.ReceiveSegmentRegistrar;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.service.test.TestDataplane;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * One loader's data plane in its own JVM, driven line by line over stdin by a test that plays the
 * barriers: {@code prepare}, {@code read-ahead} (starts the apply's store reads and waits until
 * some landed), {@code abandon}, {@code apply}, {@code verify SEED}, {@code promote}, {@code
 * discard}, {@code sent} (the last apply's digests by destination: {@code to=base64,...}), {@code
 * flip} (the next proof first flips a received byte, as {@link FlippedReceives} does), {@code prove
 * sender=base64,...} (proves the workers' buffers against what the senders sent), {@code exit}.
 * Replies {@code OK ...} or {@code ERR <failing peer> <message>}.
 */
public final class LoaderProcessMain {
    private LoaderProcessMain() {}

    public static void main(String[] args) throws Exception {
        String redisUri = args[0];
        String prefix = args[1];
        Path dir = Path.of(args[2]);
        String instance = args[3];
        String node = args[4];
        long firstGeneration = Long.parseLong(args[5]);
        int slots = Integer.parseInt(args[6]);
        Duration timeout = Duration.ofSeconds(Long.parseLong(args[7]));
        int failAt = Integer.parseInt(args[8]);

        SourceManifest manifest =
                SourceManifest.decode(Files.readAllBytes(dir.resolve("manifest.bin")));
        TargetPlacement placement =
                TargetPlacement.decode(Files.readAllBytes(dir.resolve("placement.bin")));
        Plan plan = Plan.decode(Files.readAllBytes(dir.resolve("plan.bin")));
        Cluster cluster = new Cluster(manifest, placement, plan);
        BufferDirectory directory = new BufferDirectory(cluster.buffers());
        List<String> workers = cluster.workersOf(instance);

        BatchHook hook =
                batch -> {
                    if (batch == failAt) {
                        throw new ApplyFailure(instance, "injected failure before batch " + batch);
                    }
                };
        try (Dataplane dp =
                Dataplane.open(
                        DataplaneConfig.builder(node)
                                .redisUri(redisUri)
                                .keyPrefix(prefix)
                                .secret(TestDataplane.secret())
                                .build())) {
            RegistrationManager<Segment> registrations =
                    new RegistrationManager<>(new ReceiveSegmentRegistrar(dp));
            java.util.concurrent.atomic.AtomicBoolean flip =
                    new java.util.concurrent.atomic.AtomicBoolean();
            Path flipFile = dir.resolve("flip-" + instance);
            FlippedReceives flipper = new FlippedReceives(flipFile);
            LandedFault flipOnce =
                    (slice, bytes) -> {
                        if (flip.getAndSet(false)) {
                            try {
                                Files.writeString(flipFile, "flip");
                                flipper.beforeProof(slice, bytes);
                                Files.delete(flipFile);
                            } catch (java.io.IOException e) {
                                throw new java.io.UncheckedIOException(e);
                            }
                        }
                    };
            DataplaneUpdater updater =
                    new DataplaneUpdater(
                            dp,
                            registrations,
                            new ApplySettings(slots, hook, 4, true, ReadFault.NONE, flipOnce));
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            System.out.println("READY " + instance);
            System.out.flush();
            Prepared prepared = null;
            DataplaneUpdater.Applying applying = null;
            Counters aheadFrom = null;
            ApplyCounts last = null;
            long generation = firstGeneration;
            String line;
            while ((line = in.readLine()) != null) {
                String[] cmd = line.trim().split(" ");
                try {
                    switch (cmd[0]) {
                        case "prepare" -> {
                            generation = cmd.length > 1 ? Long.parseLong(cmd[1]) : generation;
                            prepared = null;
                            applying = null;
                            prepared =
                                    updater.prepare(
                                            new PrepareRequest(
                                                    manifest.model(),
                                                    generation,
                                                    1,
                                                    instance,
                                                    workers,
                                                    manifest,
                                                    Slice.of(plan, instance),
                                                    directory,
                                                    placement.workers().stream()
                                                            .filter(
                                                                    w ->
                                                                            w.instance()
                                                                                    .equals(
                                                                                            instance))
                                                            .toList()));
                            reply("OK prepared " + prepared.slice().totalBytes());
                        }
                        case "read-ahead" -> {
                            // Starts the store reads, then waits until some landed in staging.
                            if (prepared == null) {
                                reply("ERR - nothing prepared");
                                continue;
                            }
                            Counters before = dp.counters();
                            aheadFrom = before;
                            applying = updater.begin(prepared, timeout, b -> {});
                            applying.readAhead();
                            long read = 0;
                            boolean reads = prepared.slice().slotBytes() > 0;
                            for (int i = 0; reads && i < 500 && read == 0; i++) {
                                Thread.sleep(10);
                                Counters d = dp.counters().minus(before);
                                read = d.localRead() + d.tcpRead();
                            }
                            reply("OK " + read);
                        }
                        case "abandon" -> {
                            if (applying != null) {
                                applying.abandon();
                            }
                            applying = null;
                            reply("OK abandoned");
                        }
                        case "apply" -> {
                            // the transport moved since the reads started, ahead or not
                            Counters before = applying != null ? aheadFrom : dp.counters();
                            ApplyCounts c =
                                    applying != null
                                            ? updater.apply(applying)
                                            : updater.apply(prepared, timeout, b -> {});
                            applying = null;
                            last = c;
                            Counters d = dp.counters().minus(before);
                            reply(
                                    "OK "
                                            + c.bytesRead()
                                            + " "
                                            + c.bytesPushed()
                                            + " "
                                            + c.bytesFannedOut()
                                            + " "
                                            + c.bytesReceived()
                                            + " "
                                            + d.localRead()
                                            + " "
                                            + d.localWritten()
                                            + " "
                                            + d.tcpRead()
                                            + " "
                                            + d.tcpWritten()
                                            + " "
                                            + c.sentSummedBytes()
                                            + " "
                                            + c.sentTwinnedBytes());
                        }
                        case "verify" -> {
                            GenerationContent content =
                                    new GenerationContent(
                                            Long.parseLong(cmd[1]),
                                            cmd.length > 2 ? Long.parseLong(cmd[2]) : generation);
                            BufferVerifier verifier = new BufferVerifier(manifest, content);
                            long bytes = 0;
                            for (Worker w : placement.workers()) {
                                if (w.instance().equals(instance)) {
                                    bytes +=
                                            verifier.verify(
                                                    w,
                                                    directory,
                                                    s ->
                                                            registrations.snapshot().stream()
                                                                    .filter(
                                                                            r ->
                                                                                    r.key()
                                                                                            .base()
                                                                                            .equals(
                                                                                                    s))
                                                                    .map(
                                                                            r ->
                                                                                    registrations
                                                                                            .find(
                                                                                                    r
                                                                                                            .key()))
                                                                    .findFirst()
                                                                    .orElseThrow()
                                                                    .byteBuffer());
                                }
                            }
                            reply("OK " + bytes);
                        }
                        case "checksums" ->
                                reply(
                                        "OK "
                                                + java.util.Base64.getEncoder()
                                                        .encodeToString(last.checksums().encode()));
                        case "sent" -> {
                            StringBuilder out = new StringBuilder("OK");
                            new java.util.TreeMap<>(last.sent())
                                    .forEach(
                                            (to, digests) ->
                                                    out.append(out.length() == 2 ? " " : ",")
                                                            .append(to)
                                                            .append('=')
                                                            .append(
                                                                    java.util.Base64.getEncoder()
                                                                            .encodeToString(
                                                                                    LandedProof
                                                                                            .encode(
                                                                                                    digests))));
                            reply(out.toString());
                        }
                        case "flip" -> {
                            flip.set(true);
                            reply("OK flip");
                        }
                        case "prove" -> {
                            java.util.Map<String, byte[]> sent = new java.util.HashMap<>();
                            if (cmd.length > 1) {
                                for (String pair : cmd[1].split(",")) {
                                    int eq = pair.indexOf('=');
                                    sent.put(
                                            pair.substring(0, eq),
                                            java.util.Base64.getDecoder()
                                                    .decode(pair.substring(eq + 1)));
                                }
                            }
                            reply("OK " + updater.proveLanded(prepared, sent).bytes());
                        }
                        case "promote" -> reply("OK " + registrations.promote());
                        case "discard" -> reply("OK " + registrations.discardProvisional());
                        case "stats" -> reply("OK " + registrations.stats());
                        case "exit" -> {
                            reply("OK bye");
                            return;
                        }
                        default -> reply("ERR - unknown command " + cmd[0]);
                    }
                } catch (ApplyFailure e) {
                    reply("ERR " + e.failingPeer() + " " + e.getMessage());
                } catch (RuntimeException | AssertionError e) {
                    reply("ERR " + instance + " " + e);
                }
            }
        }
    }

    private static void reply(String line) {
        System.out.println(line.replace('\n', ' '));
        System.out.flush();
    }
}
