package io.weightrelay.control.update;

import io.weightrelay.control.plan.PlanService;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.control.store.ObjectStore;
import io.weightrelay.control.store.ObjectStore.Span;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.ObjectVerification;
import io.weightrelay.reshard.checksum.ObjectVerification.ExpectedRange;
import io.weightrelay.reshard.checksum.ObjectVerification.Registered;
import io.weightrelay.reshard.checksum.ObjectVerification.Unread;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.concurrent.DaemonThreads;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Component;

/**
 * The all-applied barrier's proof: once every loader of a session reported applied with the CRC32C
 * of each range it read, the ranges are combined per object and compared with the checksums the
 * publisher registered (and every range the plan reads must have been reported by its reader). Only
 * then does the session move to post-apply; a mismatch pauses the group for rebuild, naming the
 * object and its readers, before any engine advances.
 *
 * <p>A mismatch is evidence about the readers until the stored bytes confirm it: control-api then
 * reads the disputed object back from the store itself, range by range as it was reported. Only
 * when the stored bytes do not match the published checksum is the generation marked corrupt (for
 * every group: the active pointer goes back). When they match, the readers whose ranges differ from
 * the store (a lying report, bad memory, a faulty NIC) are named and only this session fails; the
 * generation stays active. When the store cannot answer, nothing is marked either: a failed session
 * is rebuilt, and its next proof asks again.
 *
 * <p>An object the plan reads only in part (a parameter-direct group that places only some of its
 * bytes) is proven all the same: while the loaders prepare and apply, control-api reads the bytes
 * the plan leaves unread itself ({@link ObjectVerification#unread}, known from the plan) and their
 * CRC32Cs fill the holes between the reported ranges. Only those bytes are read, through the same
 * bounded buffer as a read-back; a session whose holes cannot be read fails, naming control-api.
 * Runs on whichever control-api instance claimed the verification in {@code update-step.lua}; a
 * claim of a dead instance expires and the next touch of the session takes it over.
 */
@Component
class UpdateVerifier implements DisposableBean {
    private static final Logger log = LoggerFactory.getLogger(UpdateVerifier.class);
    private static final int KEPT_PLANS = 4;

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final ScriptCall scripts;
    private final PlanService plans;
    private final ObjectStore store;

    /** Each plan's ranges by object; plans are immutable per id. */
    private final Map<String, Map<String, List<ExpectedRange>>> expected =
            new LinkedHashMap<>(8, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(
                        Map.Entry<String, Map<String, List<ExpectedRange>>> eldest) {
                    return size() > KEPT_PLANS;
                }
            };

    /**
     * What a session's proof reads, loaded while its loaders prepare and apply (by session key):
     * the registered objects of a Kimi-K2 generation (70,000 of them) and the plan's ranges take a
     * second to read and decode, which the all-applied barrier would otherwise wait for.
     */
    private final Map<String, CompletableFuture<Inputs>> preloaded =
            new LinkedHashMap<>(8, 0.75f, false) {
                @Override
                protected boolean removeEldestEntry(
                        Map.Entry<String, CompletableFuture<Inputs>> eldest) {
                    return size() > KEPT_PLANS;
                }
            };

    /** One thread, a short queue: a preload that cannot run is done by the proof itself. */
    private final ThreadPoolExecutor preloading =
            DaemonThreads.single(
                    "verify-preload", KEPT_PLANS, new ThreadPoolExecutor.DiscardPolicy());

    /** Names control-api where a failure is its own (its read of the store, its plan). */
    private static final String CONTROL_API = "control-api";

    /**
     * The registered objects (and those without a CRC32C), the plan's ranges by object, and
     * control-api's own reads of the bytes the plan leaves unread ({@code unreadBytes} of them).
     */
    private record Inputs(
            Map<String, Registered> registered,
            Map<String, String> notCrc32c,
            Map<String, List<ExpectedRange>> expected,
            Map<String, List<RangeChecksums.Entry>> ownReads,
            long unreadBytes) {}

    /** What control-api read itself of the unread bytes of objects read only in part. */
    private record OwnReads(Map<String, List<RangeChecksums.Entry>> byObject, long bytes) {}

    UpdateVerifier(
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            ScriptCall scripts,
            PlanService plans,
            ObjectStore store) {
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.scripts = scripts;
        this.plans = plans;
        this.store = store;
    }

    /**
     * Starts reading what the proof of a session just created needs, in the background: by the time
     * every loader applied it is in memory. The proof reads it again itself when the preload
     * failed, was dropped or is for another plan.
     */
    void preload(SessionKey sessionKey, String planId) {
        String session = keys.session(sessionKey);
        CompletableFuture<Inputs> future = new CompletableFuture<>();
        synchronized (preloaded) {
            preloaded.put(session, future);
        }
        preloading.execute(
                () -> {
                    try {
                        Map<String, String> notCrc32c = new HashMap<>();
                        Map<String, Registered> registered =
                                registered(sessionKey.generationId(), notCrc32c);
                        Map<String, List<ExpectedRange>> want =
                                planId == null || planId.isEmpty() ? null : expected(planId);
                        OwnReads own = readUnread(sessionKey.generationId(), want, registered);
                        future.complete(
                                new Inputs(
                                        registered, notCrc32c, want, own.byObject(), own.bytes()));
                    } catch (RuntimeException e) {
                        future.completeExceptionally(e);
                    }
                });
    }

    /** The preloaded inputs of the session for {@code planId}, or null: the proof reads them. */
    private Inputs preloaded(String session, Object planId) {
        CompletableFuture<Inputs> future;
        synchronized (preloaded) {
            future = preloaded.remove(session);
        }
        if (future == null) {
            return null;
        }
        try {
            Inputs inputs = future.get(30, TimeUnit.SECONDS);
            boolean planned = planId != null && !((String) planId).isEmpty();
            return planned == (inputs.expected() != null) ? inputs : null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (ExecutionException | TimeoutException e) {
            return null;
        }
    }

    /** The transitions {@code update-verified.lua} reported. */
    Reply verify(SessionKey sessionKey) {
        long started = System.nanoTime();
        String session = keys.session(sessionKey);
        Object planId = guard.call(() -> redis.opsForHash().get(session, "planId"));
        Inputs ready = preloaded(session, planId);
        Map<Object, Object> blobs =
                guard.call(() -> redis.opsForHash().entries(keys.sessionChecksums(sessionKey)));
        ObjectVerification.Result result;
        String failedInstance = "";
        String failure = "";
        long unreadBytes = 0;
        try {
            Map<String, RangeChecksums> reports = new HashMap<>();
            for (Map.Entry<Object, Object> e : blobs.entrySet()) {
                String instance = (String) e.getKey();
                try {
                    reports.put(
                            instance,
                            RangeChecksums.decode(
                                    Base64.getDecoder().decode((String) e.getValue())));
                } catch (CodecException | IllegalArgumentException bad) {
                    throw new VerificationFailed(
                            instance,
                            "the range checksums of "
                                    + instance
                                    + " cannot be read: "
                                    + bad.getMessage());
                }
            }
            Map<String, List<ExpectedRange>> want = ready == null ? null : ready.expected();
            if (ready == null && planId != null && !((String) planId).isEmpty()) {
                try {
                    want = expected((String) planId);
                } catch (RuntimeException gone) {
                    throw new VerificationFailed(
                            CONTROL_API,
                            "plan "
                                    + planId
                                    + " cannot be read to check what was read: "
                                    + gone.getMessage());
                }
            }
            Map<String, String> notCrc32c = ready == null ? new HashMap<>() : ready.notCrc32c();
            Map<String, Registered> registered =
                    ready == null
                            ? registered(sessionKey.generationId(), notCrc32c)
                            : ready.registered();
            OwnReads own =
                    ready == null
                            ? readUnread(sessionKey.generationId(), want, registered)
                            : new OwnReads(ready.ownReads(), ready.unreadBytes());
            unreadBytes = own.bytes();
            result = ObjectVerification.verify(reports, registered, want, own.byObject());
            if (!result.ok()) {
                failedInstance = String.join(",", result.failure().readers());
                String object = result.failure().object();
                failure =
                        notCrc32c.containsKey(object)
                                ? "object "
                                        + object
                                        + " is registered with checksum "
                                        + notCrc32c.get(object)
                                        + ", not CRC32C: what was read of it cannot be proven"
                                : result.failure().message();
                if (result.failure().corrupt()) {
                    Disputed disputed =
                            readBack(
                                    sessionKey.generationId(),
                                    object,
                                    registered.get(object),
                                    reports,
                                    own.byObject().getOrDefault(object, List.of()));
                    if (disputed.readers() != null) {
                        failedInstance = String.join(",", disputed.readers());
                        failure = disputed.finding();
                    } else if (disputed.storedBad()) {
                        failure += "; " + disputed.finding();
                        failure += markCorrupt(sessionKey.generationId(), object, failure);
                    } else {
                        failure += "; " + disputed.finding();
                    }
                }
            }
        } catch (VerificationFailed e) {
            result = null;
            failedInstance = e.instance;
            failure = e.getMessage();
        }
        long ms = (System.nanoTime() - started) / 1_000_000;
        boolean ok = result != null && result.ok();
        if (ok) {
            log.info(
                    "update {}/{}/{}: {} objects ({} bytes) proven against their checksums in {} ms"
                            + " ({} read only in part, their {} unread bytes read by control-api;"
                            + " {} unproven)",
                    sessionKey.model(),
                    sessionKey.generation(),
                    sessionKey.group(),
                    result.verifiedObjects(),
                    result.verifiedBytes(),
                    ms,
                    result.partialObjects(),
                    unreadBytes,
                    result.unprovenObjects());
        } else {
            log.warn(
                    "update {}/{}/{} failed its checksums: {}",
                    sessionKey.model(),
                    sessionKey.generation(),
                    sessionKey.group(),
                    failure);
        }
        String verified = result == null ? "0" : String.valueOf(result.verifiedObjects());
        String partial = result == null ? "0" : String.valueOf(result.partialObjects());
        return scripts.run(
                "update-verified",
                List.of(session, keys.sessionChannel(sessionKey), keys.participants(sessionKey)),
                ok ? "1" : "0",
                failedInstance,
                failure,
                String.valueOf(ms),
                verified,
                partial);
    }

    /**
     * What control-api's own read of a disputed object found: the stored bytes do not match the
     * published checksum ({@code storedBad}), or they do and {@code readers} reported ranges that
     * differ from them, or (neither) the store could not be read to tell.
     */
    private record Disputed(boolean storedBad, List<String> readers, String finding) {}

    /**
     * Reads back, from the store, the ranges of {@code object} its readers reported, and judges the
     * dispute: the ranges together against the published checksum, each against its report.
     */
    private Disputed readBack(
            GenerationId id,
            String object,
            Registered published,
            Map<String, RangeChecksums> reports,
            List<RangeChecksums.Entry> ownRead) {
        List<RangeChecksums.Entry> ranges = new ArrayList<>();
        Map<RangeChecksums.Entry, String> readerOf = new HashMap<>();
        // control-api's own earlier read of the bytes no loader reads: read again, and judged too
        for (RangeChecksums.Entry e : ownRead) {
            ranges.add(e);
            readerOf.put(e, CONTROL_API);
        }
        reports.forEach(
                (reader, report) -> {
                    for (RangeChecksums.Entry e : report.entries()) {
                        if (e.object().equals(object)) {
                            ranges.add(e);
                            readerOf.put(e, reader);
                        }
                    }
                });
        // The proof found them (with control-api's own reads) tiling the object whole, so their
        // CRC32Cs combine in this order.
        ranges.sort(Comparator.comparingLong(RangeChecksums.Entry::offset));
        List<Span> spans = new ArrayList<>(ranges.size());
        for (RangeChecksums.Entry e : ranges) {
            spans.add(new Span(e.offset(), e.length()));
        }
        String key = id.objectKey(object);
        Optional<int[]> stored;
        try {
            stored = store.rangeChecksums(key, spans);
        } catch (RuntimeException e) {
            // store-unavailable, or anything else the read threw: the claim must still end
            log.warn("reading back {} to settle its checksums failed: {}", key, e.toString());
            return new Disputed(
                    false,
                    null,
                    "control-api could not read the stored object back to tell whether its"
                            + " bytes or its readers are wrong ("
                            + e.getMessage()
                            + "), so the generation is not marked corrupt");
        }
        if (stored.isEmpty()) {
            return new Disputed(
                    false,
                    null,
                    "control-api found no object stored under "
                            + key
                            + " to read back, so the generation is not marked corrupt");
        }
        int[] crcs = stored.get();
        int whole = 0;
        TreeSet<String> wrong = new TreeSet<>();
        List<String> differing = new ArrayList<>();
        for (int i = 0; i < crcs.length; i++) {
            RangeChecksums.Entry e = ranges.get(i);
            whole = Crc32c.combine(whole, crcs[i], e.length());
            if (crcs[i] != e.crc()) {
                String reader = readerOf.get(e);
                wrong.add(reader);
                differing.add(
                        "["
                                + e.offset()
                                + ", "
                                + e.end()
                                + ") by "
                                + reader
                                + ": reported "
                                + Crc32c.format(e.crc())
                                + ", stored "
                                + Crc32c.format(crcs[i]));
            }
        }
        if (whole != published.crc()) {
            return new Disputed(
                    true,
                    null,
                    "control-api read the stored object back: "
                            + Crc32c.format(whole)
                            + ", not the published "
                            + Crc32c.format(published.crc()));
        }
        if (wrong.isEmpty()) {
            return new Disputed(
                    false,
                    null,
                    "control-api read the stored object back and found every reported range as"
                            + " stored, so the generation is not marked corrupt");
        }
        if (wrong.equals(new TreeSet<>(List.of(CONTROL_API)))) {
            return new Disputed(
                    false,
                    List.of(CONTROL_API),
                    "object "
                            + object
                            + ": control-api's own read of the bytes no loader reads differed from"
                            + " its read-back ("
                            + String.join("; ", differing)
                            + "), which matches the published "
                            + Crc32c.format(published.crc())
                            + " with every reported range: the fault is control-api's read, the"
                            + " generation is not marked corrupt; only this session fails");
        }
        String readers = String.join(", ", wrong);
        return new Disputed(
                false,
                List.copyOf(wrong),
                "object "
                        + object
                        + ": what "
                        + readers
                        + " reported reading of it does not match the stored bytes, which"
                        + " control-api read back and found matching the published "
                        + Crc32c.format(published.crc())
                        + " ("
                        + String.join("; ", differing)
                        + "): the fault is the reader's (its report, its memory or its NIC), not"
                        + " the generation's, which stays servable; only this session fails");
    }

    /**
     * Reads, from the store, the bytes of every object that the plan reads only in part and no
     * loader reads, and answers their CRC32Cs: what fills the holes of those objects' proof. Reads
     * nothing without a plan (or for a plan that reads every object whole).
     *
     * @throws VerificationFailed naming control-api when an object cannot be read
     */
    private OwnReads readUnread(
            GenerationId id,
            Map<String, List<ExpectedRange>> want,
            Map<String, Registered> registered) {
        if (want == null) {
            return new OwnReads(Map.of(), 0);
        }
        Map<String, List<RangeChecksums.Entry>> out = new HashMap<>();
        long bytes = 0;
        for (Map.Entry<String, List<Unread>> e :
                ObjectVerification.unread(want, registered).entrySet()) {
            String object = e.getKey();
            List<Span> spans = new ArrayList<>(e.getValue().size());
            for (Unread u : e.getValue()) {
                spans.add(new Span(u.offset(), u.length()));
                bytes += u.length();
            }
            String key = id.objectKey(object);
            Optional<int[]> crcs;
            try {
                crcs = store.rangeChecksums(key, spans);
            } catch (RuntimeException failed) {
                throw new VerificationFailed(
                        CONTROL_API,
                        "object "
                                + object
                                + " is read only in part, and control-api could not read the"
                                + " rest of it to prove it: "
                                + failed.getMessage());
            }
            if (crcs.isEmpty()) {
                throw new VerificationFailed(
                        CONTROL_API,
                        "object "
                                + object
                                + " is read only in part, and control-api found no object stored"
                                + " under "
                                + key
                                + " to read the rest of it");
            }
            List<RangeChecksums.Entry> entries = new ArrayList<>(spans.size());
            for (int i = 0; i < spans.size(); i++) {
                Span s = spans.get(i);
                entries.add(
                        new RangeChecksums.Entry(object, s.offset(), s.length(), crcs.get()[i]));
            }
            out.put(object, entries);
        }
        return new OwnReads(out, bytes);
    }

    /**
     * The stored bytes of {@code object} are not what was published: no loader may load the
     * generation again, and if it is active the previous whole generation is active again.
     */
    private String markCorrupt(GenerationId id, String object, String detail) {
        Reply r =
                scripts.run(
                        "corrupt",
                        List.of(),
                        keys.prefix(),
                        id.model(),
                        String.valueOf(id.generation()),
                        object,
                        detail);
        String reactivated = r.size() > 1 ? r.item(1) : "";
        log.error(
                "generation {} of {} is corrupt (object {}); {}",
                id.generation(),
                id.model(),
                object,
                reactivated.isEmpty()
                        ? "no earlier whole generation to serve"
                        : "generation " + reactivated + " is active again");
        return reactivated.isEmpty()
                ? "; generation " + id.generation() + " is marked corrupt"
                : "; generation "
                        + id.generation()
                        + " is marked corrupt and generation "
                        + reactivated
                        + " is active again";
    }

    /** Registered objects with a CRC32C; the others go to {@code notCrc32c} (id to checksum). */
    private Map<String, Registered> registered(GenerationId id, Map<String, String> notCrc32c) {
        Map<Object, Object> objects =
                guard.call(() -> redis.opsForHash().entries(keys.objects(id)));
        Map<String, Registered> out = new HashMap<>(objects.size() * 2);
        objects.forEach(
                (fragment, value) -> {
                    String[] parts = ((String) value).split("\\|", -1);
                    try {
                        out.put(
                                (String) fragment,
                                new Registered(Long.parseLong(parts[0]), Crc32c.parse(parts[1])));
                    } catch (RuntimeException e) {
                        notCrc32c.put((String) fragment, parts.length > 1 ? parts[1] : "");
                    }
                });
        return out;
    }

    private Map<String, List<ExpectedRange>> expected(String planId) {
        synchronized (expected) {
            Map<String, List<ExpectedRange>> cached = expected.get(planId);
            if (cached != null) {
                return cached;
            }
        }
        Map<String, List<ExpectedRange>> computed = plans.expectedRanges(planId);
        synchronized (expected) {
            expected.put(planId, computed);
        }
        return computed;
    }

    private static final class VerificationFailed extends RuntimeException {
        private final String instance;

        VerificationFailed(String instance, String message) {
            super(message);
            this.instance = instance;
        }
    }

    @Override
    public void destroy() {
        preloading.shutdownNow();
    }
}
