package io.weightrelay.control.registry;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.InstanceSpan;
import io.weightrelay.api.common.model.Nic;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.DataplaneEngineName;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderHeartbeat;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.control.redis.Incarnation;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisHashes;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.RedisTime;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.security.Role;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.ZSetOperations;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;

/**
 * Segment owners and loaders with heartbeat TTLs. A registration is a hash plus a member of a
 * sorted set scored by its expiry; live means expiry in the future, or within an outage of every
 * control-api instance whose grace still runs ({@link ControlPlaneTicks#liveAfter}). Nothing
 * removes an expired member: a registration that expired unseen can beat again.
 */
@Service
public class Registry {

    private static final Logger log = LoggerFactory.getLogger(Registry.class);

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final ScriptCall scripts;
    private final JsonMapper json;
    private final RegistryProperties properties;
    private final PlacementTemplates templates;
    private final ControlPlaneTicks ticks;
    private final ApplicationEventPublisher events;
    private final Incarnation incarnation;

    /** The engine this control-api runs ({@code relay.dataplane.engine}): the deployment's. */
    private final DataplaneEngineName engine;

    Registry(
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            ScriptCall scripts,
            JsonMapper json,
            RegistryProperties properties,
            PlacementTemplates templates,
            ControlPlaneTicks ticks,
            ApplicationEventPublisher events,
            Incarnation incarnation,
            DataplaneSettings dataplane) {
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.scripts = scripts;
        this.json = json;
        this.properties = properties;
        this.templates = templates;
        this.ticks = ticks;
        this.events = events;
        this.incarnation = incarnation;
        this.engine = DataplaneEngineName.fromValue(dataplane.engine().label());
    }

    private static final int LIST_PAGE = 256;

    // ---- segment owners ------------------------------------------------------------------------

    /**
     * Registers a segment owner. {@code registeredBy} is the caller's role: an admin URL is kept
     * (and called by checkpoints) only when it is the owner role's, so no other credential can
     * point control-api's owner token at a URL of its choosing.
     */
    public SegmentOwner registerSegment(String segment, SegmentRegistration r, Role registeredBy) {
        Reply result =
                scripts.run(
                        "register-segment",
                        List.of(keys.segment(segment), keys.segments()),
                        segment,
                        millis(properties.segmentTtl()),
                        r.getNode(),
                        r.getEndpoint(),
                        String.valueOf(r.getSize()),
                        r.getAdminUrl() == null ? "" : r.getAdminUrl(),
                        registeredBy.configName(),
                        r.getRole() == null
                                ? io.weightrelay.api.control.model.SegmentRole.TRAINER.getValue()
                                : r.getRole().getValue(),
                        r.getStoreEndpoint() == null ? "" : r.getStoreEndpoint());
        if (result.is("owned")) {
            throw ownedByOwner(segment, registeredBy, "replace");
        }
        return withIncarnation(getSegment(segment));
    }

    /**
     * The answer to an owner's registration or heartbeat carries the incarnation mark read fresh
     * (not the one checked up to a second ago): the owner compares it with the mark under which
     * control-api last knew its generations, to tell a generation Redis lost (whose objects only
     * the owner can free now) from one collected normally.
     */
    private SegmentOwner withIncarnation(SegmentOwner s) {
        return s.incarnation(incarnation.check());
    }

    /**
     * Whether {@code segment} was registered with an owner credential: then only an owner (or an
     * operator, to deregister) may change it.
     */
    public boolean registeredByOwner(String segment) {
        return Role.OWNER
                .configName()
                .equals(
                        guard.call(
                                () ->
                                        redis.opsForHash()
                                                .get(keys.segment(segment), "registeredBy")));
    }

    /** 403: {@code role} may not {@code what} a registration an owner made. */
    public static RuntimeException ownedByOwner(String segment, Role role, String what) {
        return new io.weightrelay.service.problem.RelayException(
                        io.weightrelay.service.problem.CommonProblems.FORBIDDEN,
                        "role "
                                + role.configName()
                                + " may not "
                                + what
                                + " segment '"
                                + segment
                                + "': it was registered by its owner (with an owner token), whose"
                                + " admin URL checkpoints call")
                .with("segment", segment);
    }

    public SegmentOwner heartbeatSegment(String segment) {
        beat(segments(), "heartbeat", segment);
        return withIncarnation(getSegment(segment));
    }

    public SegmentOwner getSegment(String segment) {
        return findSegment(segment).orElseThrow(() -> segmentNotFound(segment));
    }

    public Optional<SegmentOwner> findSegment(String segment) {
        return findMember(segments(), segment, this::toSegment);
    }

    public void deregisterSegment(String segment) {
        removeMember(segments(), segment);
    }

    /**
     * The last heartbeat of each live loader, by instance, from the heartbeat set alone (a member's
     * score is its last heartbeat plus {@code loader-ttl}): no registration is read or decoded, so
     * a scrape's refresh costs one range read however large the placements are.
     */
    public Map<String, Instant> liveLoaderHeartbeats() {
        return lastHeartbeats(loaders());
    }

    /** As {@link #liveLoaderHeartbeats()}, for segment owners by segment. */
    public Map<String, Instant> liveSegmentHeartbeats() {
        return lastHeartbeats(segments());
    }

    private Map<String, Instant> lastHeartbeats(Kind kind) {
        Map<String, Instant> out = new java.util.TreeMap<>();
        for (ZSetOperations.TypedTuple<String> member : live(kind)) {
            out.put(
                    member.getValue(),
                    Instant.ofEpochMilli(member.getScore().longValue()).minus(kind.ttl()));
        }
        return out;
    }

    /** Segment owners whose heartbeat is within the TTL, by name. */
    public List<SegmentOwner> liveSegments() {
        List<SegmentOwner> out = new ArrayList<>();
        for (ZSetOperations.TypedTuple<String> member : live(segments())) {
            Map<Object, Object> h =
                    guard.call(() -> redis.opsForHash().entries(keys.segment(member.getValue())));
            if (!h.isEmpty()) {
                out.add(toSegment(h, true));
            }
        }
        out.sort((a, b) -> a.getSegment().compareTo(b.getSegment()));
        return out;
    }

    // ---- loaders
    // ---------------------------------------------------------------------------------

    /**
     * Registers a loader. Inline fragments are stored as templates; every worker's template is
     * checked against its buffers (once per template and buffer sizes in this process), and what is
     * kept is the workers' headers, buffers and template digests.
     */
    public Loader registerLoader(String instance, LoaderRegistration r) {
        RegistrationChecks.placement(instance, r);
        if (r.getDataplaneEngine() != null || r.getSpan() != null) {
            List<Loader> group = liveLoaders(r.getModel(), r.getGroup());
            RegistrationChecks.engine(instance, r, engine, group);
            if (r.getSpan() != null) {
                RegistrationChecks.span(instance, r, group);
            }
        }
        List<StoredWorkers.Worker> summaries = new ArrayList<>();
        Set<String> digests = new LinkedHashSet<>();
        List<String> missing = new ArrayList<>();
        for (WorkerPlacement w : r.getWorkers()) {
            String digest = null;
            int count = 0;
            if (w.getMode() != ConsumeMode.COMPAT) {
                FragmentTemplate inline = null;
                if (w.getPlacement() != null) {
                    digest = w.getPlacement();
                } else {
                    inline = PlacementChecks.template(instance, w);
                    digest = inline.digest();
                }
                String check = "registration|" + digest + "|" + bufferSizes(w);
                if (inline != null) {
                    count = inline.size();
                    if (!templates.passed(check)) {
                        PlacementChecks.registration(instance, w, inline);
                        templates.pass(check);
                    }
                    templates.store(inline);
                } else {
                    FragmentTemplate t = templates.find(digest);
                    if (t == null) {
                        if (!missing.contains(digest)) {
                            missing.add(digest);
                        }
                        continue;
                    }
                    count = t.size();
                    if (!templates.passed(check)) {
                        PlacementChecks.registration(instance, w, t);
                        templates.pass(check);
                    }
                }
                digests.add(digest);
            }
            summaries.add(StoredWorkers.summary(w, digest, count));
        }
        if (!missing.isEmpty()) {
            throw templatesMissing(instance, missing);
        }
        List<String> keyList =
                new ArrayList<>(
                        List.of(keys.loader(instance), keys.loaders(), keys.loaderEpochs()));
        digests.forEach(d -> keyList.add(keys.placement(d)));
        Reply result =
                scripts.run(
                        "register-loader",
                        keyList,
                        instance,
                        millis(properties.loaderTtl()),
                        r.getModel(),
                        r.getGroup(),
                        r.getNode(),
                        r.getEndpoint() == null ? "" : r.getEndpoint(),
                        new StoredWorkers(StoredWorkers.FORMAT, summaries).write(json),
                        StoredNics.of(r.getNics()).write(json),
                        String.valueOf(properties.placementTtl().toMillis()),
                        String.join(" ", digests),
                        r.getSpan() == null ? "" : r.getSpan().getRolloutInstance(),
                        r.getSpan() == null ? "" : String.valueOf(r.getSpan().getNodes()),
                        keys.prefix(),
                        r.getDataplaneEngine() == null ? "" : r.getDataplaneEngine().getValue());
        if (result.is("missing")) {
            throw templatesMissing(instance, result.items(1));
        }
        long released = result.number(2);
        if (released > 0) {
            log.info(
                    "loader {} registered afresh: {} lease(s) of its earlier incarnation released",
                    instance,
                    released);
        }
        events.publishEvent(new LoaderRegistered(r.getModel(), r.getGroup(), instance));
        return getLoader(instance);
    }

    /** The buffer ids and sizes a worker's layout checks depend on (not its segment). */
    public static String bufferSizes(WorkerPlacement w) {
        StringBuilder out = new StringBuilder();
        for (ReceiveBuffer b : w.getBuffers()) {
            out.append(b.getBufferId()).append('=').append(b.getSize()).append(';');
        }
        return out.toString();
    }

    private static RuntimeException templatesMissing(String instance, List<String> missing) {
        return RegistryProblems.PLACEMENT_TEMPLATE_NOT_FOUND
                .exception(
                        "instance "
                                + instance
                                + " names fragment templates that are not stored: "
                                + String.join(", ", missing)
                                + "; PUT them to /api/v1/placements/{digest} and register again")
                .with("instanceId", instance)
                .with("missing", missing);
    }

    /**
     * Renews a loader's registration, the TTL of the fragment templates it names, and every
     * unexpired lease it holds on its model's generations up to its new expiry: a loader's leases
     * live as long as it beats (heartbeat-loader.lua).
     */
    public LoaderHeartbeat heartbeatLoader(String instance) {
        Reply result =
                beat(
                        loaders(),
                        "heartbeat-loader",
                        instance,
                        keys.placement(""),
                        String.valueOf(properties.placementTtl().toMillis()),
                        keys.prefix(),
                        ticks.graceMillis(),
                        ticks.gapMillis(),
                        ticks.keys().get(0),
                        ticks.keys().get(1));
        LoaderHeartbeat beat = new LoaderHeartbeat(instance, result.number(1), true);
        beat.setLastHeartbeat(RedisTime.stamp(result.item(3)));
        return beat;
    }

    public Loader getLoader(String instance) {
        return findMember(loaders(), instance, this::toLoader)
                .orElseThrow(() -> loaderNotFound(instance));
    }

    public void deregisterLoader(String instance) {
        removeMember(loaders(), instance);
    }

    /**
     * A kind of registered member (segment owners, loaders): each member is a hash of its fields
     * plus its heartbeat expiry in the kind's sorted set, {@code ttl} after its last beat.
     */
    private record Kind(
            Function<String, String> hash,
            String expiries,
            Duration ttl,
            Function<String, RuntimeException> notFound) {}

    private Kind segments() {
        return new Kind(
                keys::segment, keys.segments(), properties.segmentTtl(), Registry::segmentNotFound);
    }

    private Kind loaders() {
        return new Kind(
                keys::loader, keys.loaders(), properties.loaderTtl(), Registry::loaderNotFound);
    }

    /**
     * Runs a heartbeat script: KEYS the member's hash and its kind's expiry set, ARGV the member,
     * its kind's TTL (the script adds it to the Redis server's time) and {@code extra}. A member
     * that is not registered is refused.
     */
    private Reply beat(Kind kind, String script, String member, String... extra) {
        List<String> args = new ArrayList<>(List.of(member, millis(kind.ttl())));
        args.addAll(List.of(extra));
        Reply result =
                scripts.run(script, List.of(kind.hash().apply(member), kind.expiries()), args);
        if (result.is("not-found")) {
            throw kind.notFound().apply(member);
        }
        return result;
    }

    /**
     * A registered member as {@code read} makes it from its hash and whether it is live (its expiry
     * is after {@link ControlPlaneTicks#liveAfter}); absent when its hash is.
     */
    private <T> Optional<T> findMember(
            Kind kind, String member, BiFunction<Map<Object, Object>, Boolean, T> read) {
        Map<Object, Object> h =
                guard.call(() -> redis.opsForHash().entries(kind.hash().apply(member)));
        if (h.isEmpty()) {
            return Optional.empty();
        }
        Double expiry = guard.call(() -> redis.opsForZSet().score(kind.expiries(), member));
        boolean alive = expiry != null && expiry > ticks.liveAfter(kind.ttl()).toEpochMilli();
        return Optional.of(read.apply(h, alive));
    }

    private void removeMember(Kind kind, String member) {
        guard.run(
                () -> {
                    redis.delete(kind.hash().apply(member));
                    redis.opsForZSet().remove(kind.expiries(), member);
                });
    }

    /** Live loaders, optionally of one model and group, by instance. */
    public List<Loader> liveLoaders(String model, String group) {
        return liveLoaders(model, group, null, Integer.MAX_VALUE);
    }

    /**
     * A page of live loaders (summaries), by instance: those after {@code after} (null: from the
     * first), at most {@code limit}.
     */
    public List<Loader> liveLoaders(String model, String group, String after, int limit) {
        // The heartbeat zset's scores are the expiries: no ZSCORE per loader.
        java.util.TreeSet<String> live = new java.util.TreeSet<>();
        for (ZSetOperations.TypedTuple<String> member : live(loaders())) {
            if (after == null || member.getValue().compareTo(after) > 0) {
                live.add(member.getValue());
            }
        }
        List<String> instances = new ArrayList<>(live);
        List<Loader> out = new ArrayList<>();
        // One pipelined round trip per page of registrations, not one per loader: every loader
        // of a group lists the group at prepare, so per-loader trips grew with its square. The
        // page reads each registration's small fields only; its workers and NICs (tens of
        // kilobytes of JSON per loader) are read and parsed once per registration, then kept.
        for (int from = 0; from < instances.size() && out.size() < limit; from += LIST_PAGE) {
            List<String> page =
                    instances.subList(from, Math.min(instances.size(), from + LIST_PAGE));
            List<String> loaderKeys = new ArrayList<>(page.size());
            for (String instance : page) {
                loaderKeys.add(keys.loader(instance));
            }
            List<List<Object>> heads =
                    guard.call(() -> RedisHashes.fields(redis, loaderKeys, HEAD_FIELDS));
            Loader[] found = new Loader[page.size()];
            List<Integer> unparsed = new ArrayList<>();
            for (int k = 0; k < page.size(); k++) {
                List<Object> head = heads.get(k);
                Map<Object, Object> h = new HashMap<>();
                for (int f = 0; f < HEAD_FIELDS.size(); f++) {
                    if (head != null && head.get(f) != null) {
                        h.put(HEAD_FIELDS.get(f), head.get(f));
                    }
                }
                if (str(h, "epoch") == null
                        || (model != null && !model.equals(str(h, "model")))
                        || (group != null && !group.equals(str(h, "group")))) {
                    continue; // gone since the zset was read, or another model's or group's
                }
                Parsed p = parsed.get(page.get(k));
                if (p != null && p.registration().equals(Registration.of(h))) {
                    found[k] = toLoader(h, true, p);
                } else {
                    unparsed.add(k);
                }
            }
            if (!unparsed.isEmpty()) {
                List<String> missed = new ArrayList<>(unparsed.size());
                for (int k : unparsed) {
                    missed.add(loaderKeys.get(k));
                }
                List<Map<Object, Object>> hashes =
                        guard.call(() -> RedisHashes.entries(redis, missed));
                for (int m = 0; m < unparsed.size(); m++) {
                    Map<Object, Object> h = hashes.get(m);
                    int k = unparsed.get(m);
                    // Re-registered in between: the whole hash is one registration, so take it.
                    if (!h.isEmpty()
                            && (model == null || model.equals(str(h, "model")))
                            && (group == null || group.equals(str(h, "group")))) {
                        found[k] = toLoader(h, true);
                    }
                }
            }
            for (Loader loader : found) {
                if (loader != null && out.size() < limit) {
                    out.add(loader);
                }
            }
        }
        return out;
    }

    // ---- helpers
    // ---------------------------------------------------------------------------------

    /**
     * The members of {@code kind} whose expiry is after {@link ControlPlaneTicks#liveAfter}: the
     * Redis server's time, or the start of an outage whose grace still runs.
     */
    private List<ZSetOperations.TypedTuple<String>> live(Kind kind) {
        double after = ticks.liveAfter(kind.ttl()).toEpochMilli();
        Set<ZSetOperations.TypedTuple<String>> members =
                guard.call(
                        () ->
                                redis.opsForZSet()
                                        .rangeByScoreWithScores(
                                                kind.expiries(),
                                                after + 1,
                                                Double.POSITIVE_INFINITY));
        return members == null ? List.of() : new ArrayList<>(members);
    }

    private SegmentOwner toSegment(Map<Object, Object> h, boolean alive) {
        SegmentOwner s =
                new SegmentOwner(
                        str(h, "segment"),
                        str(h, "node"),
                        str(h, "endpoint"),
                        Long.parseLong(str(h, "size")),
                        alive);
        String adminUrl = str(h, "adminUrl");
        // Only an admin URL registered with an owner credential is one (registrations made before
        // the owner role existed, by a trainer token, have none until the owner re-registers).
        boolean byOwner = Role.OWNER.configName().equals(str(h, "registeredBy"));
        s.setAdminUrl(adminUrl == null || adminUrl.isEmpty() || !byOwner ? null : adminUrl);
        s.setLastHeartbeat(RedisTime.stamp(str(h, "lastHeartbeat")));
        String storeEndpoint = str(h, "storeEndpoint");
        s.setStoreEndpoint(storeEndpoint == null || storeEndpoint.isEmpty() ? null : storeEndpoint);
        String role = str(h, "role");
        s.setRole(
                io.weightrelay.api.control.model.SegmentRole.fromValue(
                        role == null || role.isEmpty() ? "trainer" : role));
        return s;
    }

    /** The fields of a loader's registration read on every listing: all but workers and NICs. */
    private static final List<String> HEAD_FIELDS =
            List.of(
                    "instance",
                    "model",
                    "group",
                    "node",
                    "epoch",
                    "registeredAt",
                    "endpoint",
                    "lastHeartbeat",
                    "generation",
                    "spanInstance",
                    "spanNodes",
                    "dataplaneEngine");

    /** Parsed registrations kept at most: far above any deployment's live loaders. */
    private static final int PARSED_MAX = 16_384;

    /**
     * One registration of one loader. Workers and NICs are written only by a registration, which
     * always moves the epoch; the registration time tells apart two registrations that got the same
     * epoch from a counter that started again (Redis restarted empty).
     */
    private record Registration(String epoch, String registeredAt) {
        static Registration of(Map<Object, Object> h) {
            return new Registration(str(h, "epoch"), Objects.toString(str(h, "registeredAt"), ""));
        }
    }

    /** A registration's workers and NICs as parsed once; never modified after. */
    private record Parsed(
            Registration registration, List<WorkerPlacement> workers, List<Nic> nics) {}

    /** The parsed workers and NICs of each loader's newest registration seen, by instance. */
    private final Map<String, Parsed> parsed = new ConcurrentHashMap<>();

    private Loader toLoader(Map<Object, Object> h, boolean alive) {
        String key = keys.loader(str(h, "instance"));
        String nics = str(h, "nics");
        Parsed p =
                new Parsed(
                        Registration.of(h),
                        List.copyOf(StoredWorkers.read(json, key, str(h, "workers")).toApi()),
                        nics == null || nics.isEmpty()
                                ? null
                                : List.copyOf(StoredNics.read(json, key, nics).toApi()));
        if (parsed.size() >= PARSED_MAX) {
            parsed.clear();
        }
        parsed.put(str(h, "instance"), p);
        return toLoader(h, alive, p);
    }

    private Loader toLoader(Map<Object, Object> h, boolean alive, Parsed p) {
        Loader l =
                new Loader(
                        str(h, "instance"),
                        str(h, "model"),
                        str(h, "group"),
                        str(h, "node"),
                        Long.parseLong(str(h, "epoch")),
                        alive,
                        p.workers());
        String endpoint = str(h, "endpoint");
        l.setEndpoint(endpoint == null || endpoint.isEmpty() ? null : endpoint);
        l.setLastHeartbeat(RedisTime.stamp(str(h, "lastHeartbeat")));
        String generation = str(h, "generation");
        if (generation != null) {
            l.setGeneration(Long.parseLong(generation));
        }
        String spanInstance = str(h, "spanInstance");
        if (spanInstance != null && !spanInstance.isEmpty()) {
            l.setSpan(new InstanceSpan(spanInstance, Integer.parseInt(str(h, "spanNodes"))));
        }
        if (p.nics() != null) {
            l.setNics(p.nics());
        }
        String engine = str(h, "dataplaneEngine");
        if (engine != null && !engine.isEmpty()) {
            l.setDataplaneEngine(DataplaneEngineName.fromValue(engine));
        }
        return l;
    }

    private static String millis(Duration ttl) {
        return String.valueOf(ttl.toMillis());
    }

    private static String str(Map<Object, Object> h, String field) {
        return Objects.toString(h.get(field), null);
    }

    private static RuntimeException segmentNotFound(String segment) {
        return RegistryProblems.SEGMENT_NOT_FOUND
                .exception("no segment owner " + segment + " is registered")
                .with("segment", segment);
    }

    private static RuntimeException loaderNotFound(String instance) {
        return RegistryProblems.LOADER_NOT_FOUND
                .exception("no loader " + instance + " is registered")
                .with("instance", instance);
    }
}
