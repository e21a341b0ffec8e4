package io.weightrelay.control.update;

import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.control.registry.ControlPlaneTicks;
import io.weightrelay.control.registry.RegistryProperties;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Component;

/**
 * Runs {@code update-start.lua}, which starts a group's session, joins it, replaces one that ended
 * with other participants, or retries one that ended RESUMED_OLD as its next attempt (once no
 * member of the failed attempt can still act in it), and does what a fresh session needs beside it:
 * the sent digests of an earlier session dropped, the checksum verifier's inputs preloaded. Who may
 * be in the session is decided before ({@link UpdateService}); the script refuses only what it
 * alone sees (a conflicting running session, part of a rollout instance).
 */
@Component
class SessionStarts {

    private static final Logger log = LoggerFactory.getLogger(SessionStarts.class);

    private final ScriptCall scripts;
    private final RedisKeys keys;
    private final StringRedisTemplate redis;
    private final RedisGuard guard;
    private final UpdateProperties properties;
    private final UpdateVerifier verifier;
    private final SessionReads reads;
    private final RegistryProperties registryProperties;
    private final ControlPlaneTicks ticks;

    SessionStarts(
            ScriptCall scripts,
            RedisKeys keys,
            StringRedisTemplate redis,
            RedisGuard guard,
            UpdateProperties properties,
            UpdateVerifier verifier,
            SessionReads reads,
            RegistryProperties registryProperties,
            ControlPlaneTicks ticks) {
        this.scripts = scripts;
        this.keys = keys;
        this.redis = redis;
        this.guard = guard;
        this.properties = properties;
        this.verifier = verifier;
        this.reads = reads;
        this.registryProperties = registryProperties;
        this.ticks = ticks;
    }

    /**
     * Starts or joins the session with these instances (distinct, sorted) and plan; answers it
     * after a touch (which applies a phase timeout that passed) when {@code touch}. {@code caller}
     * is the loader whose prepare this is (null for a start): it begins a new update run, so its
     * part in an attempt that failed is over.
     */
    UpdateSession open(
            SessionKey sessionKey,
            TreeSet<String> instances,
            String planId,
            int timeoutSeconds,
            boolean touch,
            String caller) {
        List<String> args = new ArrayList<>();
        args.add(String.valueOf(timeoutSeconds * 1000L));
        args.add(planId == null ? "" : planId);
        args.add(String.valueOf(properties.sessionTtl().toSeconds()));
        args.add(String.valueOf(registryProperties.loaderTtl().toMillis()));
        args.add(ticks.gapMillis());
        args.add(caller == null ? "" : caller);
        args.addAll(instances);
        List<String> startKeys = new ArrayList<>();
        startKeys.add(keys.session(sessionKey));
        startKeys.add(keys.participants(sessionKey));
        startKeys.add(keys.sessionChannel(sessionKey));
        startKeys.add(keys.sessionChecksums(sessionKey));
        startKeys.add(keys.loaders());
        startKeys.addAll(ticks.keys());
        // the KEYS index of each instance's loader hash is its ARGV index
        for (String instance : instances) {
            startKeys.add(keys.loader(instance));
        }
        Reply result = scripts.run("update-start", startKeys, args);
        String code = result.code();
        if ("incomplete".equals(code)) {
            throw incomplete(sessionKey.group(), result);
        }
        if ("pending".equals(code)) {
            throw pending(sessionKey, result);
        }
        boolean fresh =
                "created".equals(code)
                        || "restarted".equals(code)
                        || "retried".equals(code)
                        || "replaced".equals(code);
        if (fresh) {
            // what an earlier session of this generation had sent is no proof for this one
            guard.run(() -> redis.delete(keys.sessionSent(sessionKey)));
        }
        if (fresh && properties.verifyChecksums()) {
            verifier.preload(sessionKey, planId);
        }
        if ("restarted".equals(code)) {
            log.info(
                    "update {}/{}/{}: the failed session is started afresh for the rebuilt group",
                    sessionKey.model(),
                    sessionKey.generation(),
                    sessionKey.group());
        }
        if ("retried".equals(code)) {
            log.info(
                    "update {}/{}/{}: the session that ended RESUMED_OLD is retried by {}",
                    sessionKey.model(),
                    sessionKey.generation(),
                    sessionKey.group(),
                    instances);
        }
        if ("replaced".equals(code)) {
            log.info(
                    "update {}/{}/{}: the ended session of {} is replaced by one of {}",
                    sessionKey.model(),
                    sessionKey.generation(),
                    sessionKey.group(),
                    result.items(1),
                    instances);
        }
        if ("conflict".equals(code)) {
            throw UpdateProblems.SESSION_CONFLICT
                    .exception(
                            "the session of group "
                                    + sessionKey.group()
                                    + " already exists with participants "
                                    + result.items(1))
                    .with("participants", result.items(1));
        }
        return reads.read(sessionKey, touch, true);
    }

    /**
     * The refusal of a retry while members of the attempt that ended RESUMED_OLD may still act in
     * it (registered, live, no end reported): a new attempt beside them could receive their late
     * reports or bytes.
     */
    private static RelayException pending(SessionKey sessionKey, Reply result) {
        int attempt = (int) result.number(1);
        List<String> acting = result.items(2);
        return UpdateProblems.SESSION_CLOSED
                .exception(
                        "attempt "
                                + attempt
                                + " of the session of group "
                                + sessionKey.group()
                                + " to generation "
                                + sessionKey.generation()
                                + " ended RESUMED_OLD, and "
                                + String.join(", ", acting)
                                + (acting.size() == 1 ? " is" : " are")
                                + " still registered without having reported the end of "
                                + (acting.size() == 1 ? "its" : "their")
                                + " part in it: attempt "
                                + (attempt + 1)
                                + " starts once every member of attempt "
                                + attempt
                                + " has ended (reported FAILED, registered again, or no longer"
                                + " registered)")
                .with("state", "RESUMED_OLD")
                .with("attempt", attempt)
                .with("waitingFor", acting);
    }

    /** The refusal of a session holding part of a rollout instance, from the start script. */
    private static RelayException incomplete(String group, Reply result) {
        String instance = result.item(1);
        int nodes = (int) result.number(2);
        String reason = result.item(3);
        List<String> loaders = result.items(4);
        String why =
                switch (reason) {
                    case "missing" -> "only " + loaders.size() + " of its loaders are in it";
                    case "extra" -> loaders.size() + " loaders claim it";
                    case "same-node" -> "two of its loaders serve one node";
                    default -> "its loaders disagree on how many nodes it spans";
                };
        return UpdateProblems.ROLLOUT_INSTANCE_INCOMPLETE
                .exception(
                        "the session of group "
                                + group
                                + " would hold rollout instance "
                                + instance
                                + ", which spans "
                                + nodes
                                + " nodes with one loader each, but "
                                + why
                                + ": "
                                + String.join(", ", loaders))
                .with("rolloutInstance", instance)
                .with("nodes", nodes)
                .with("reason", reason)
                .with("loaders", loaders);
    }
}
