package io.weightrelay.control.update;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.control.registry.ControlPlaneTicks;
import io.weightrelay.control.registry.RegistryProperties;
import io.weightrelay.reshard.manifest.SessionKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.stereotype.Component;

/**
 * Runs {@code update-step.lua}, the one script that moves a session (a report, or a touch that
 * applies a phase timeout, a dead participant or a verifier that died), with the keys and arguments
 * it expects, and turns the transitions it reports into metrics. Whoever runs a step that claimed
 * the checksum verification runs it here, so a claimed verification is never left undone.
 */
@Component
class SessionSteps {

    private final ScriptCall scripts;
    private final RedisKeys keys;
    private final UpdateProperties properties;
    private final RegistryProperties registryProperties;
    private final ControlPlaneTicks ticks;
    private final MeterRegistry meters;
    private final UpdateVerifier verifier;

    SessionSteps(
            ScriptCall scripts,
            RedisKeys keys,
            UpdateProperties properties,
            RegistryProperties registryProperties,
            ControlPlaneTicks ticks,
            MeterRegistry meters,
            UpdateVerifier verifier) {
        this.scripts = scripts;
        this.keys = keys;
        this.properties = properties;
        this.registryProperties = registryProperties;
        this.ticks = ticks;
        this.meters = meters;
        this.verifier = verifier;
    }

    /**
     * A step that reports nothing: applies a phase timeout that passed, a verifier that died or a
     * participant no longer registered. Throws {@code session-not-found} when there is no session.
     */
    void touch(SessionKey sessionKey) {
        Reply result = step(sessionKey, null, List.of(), "", "", "", "", "", "", "", "", "");
        if (result.is("not-found")) {
            throw SessionReads.notFound(sessionKey);
        }
        record(sessionKey.model(), result);
        if (result.is("ok") && verificationClaimed(result)) {
            // The verifier that claimed this session died; this touch takes it over.
            record(sessionKey.model(), verifier.verify(sessionKey));
        }
    }

    /**
     * update-step.lua with {@code args} (the reporting instance first, empty for a touch), the
     * report's {@code attempt} (null when it names none), then {@code sent}'s (destination,
     * digests) pairs. A report's transitions are recorded here; a touch's by {@link #touch}, which
     * also looks at its answer.
     */
    Reply step(SessionKey sessionKey, Integer attempt, List<String> sent, String... args) {
        List<String> argv = new ArrayList<>(args.length + 6 + sent.size());
        argv.addAll(List.of(args));
        argv.add(properties.verifyChecksums() ? "1" : "");
        argv.add(String.valueOf(sessionKey.generation()));
        argv.add(keys.prefix());
        argv.add(String.valueOf(registryProperties.loaderTtl().toMillis()));
        argv.add(ticks.gapMillis());
        argv.add(attempt == null ? "" : String.valueOf(attempt));
        argv.addAll(sent);
        String instance = args[0];
        List<String> stepKeys =
                new ArrayList<>(
                        List.of(
                                keys.session(sessionKey),
                                keys.participants(sessionKey),
                                keys.loader(instance.isEmpty() ? "-" : instance),
                                keys.sessionChannel(sessionKey),
                                keys.sessionChecksums(sessionKey),
                                keys.loaders()));
        stepKeys.addAll(ticks.keys());
        stepKeys.add(keys.sessionSent(sessionKey));
        Reply result = scripts.run("update-step", stepKeys, argv);
        if (!instance.isEmpty()) {
            record(sessionKey.model(), result);
        }
        return result;
    }

    /** Runs the checksum verification when {@code result}, a step that went through, claimed it. */
    void verifyWhenClaimed(SessionKey sessionKey, Reply result) {
        if (verificationClaimed(result)) {
            record(sessionKey.model(), verifier.verify(sessionKey));
        }
    }

    /** Turns the transitions a script reports into metrics, once, on the instance that saw them. */
    private void record(String model, Reply result) {
        if (!result.is("ok")) {
            return;
        }
        for (String t : result.items(1)) {
            int colon = t.indexOf(':');
            String name = t.substring(0, colon);
            String value = t.substring(colon + 1);
            if ("verify".equals(name)) {
                continue;
            }
            if ("failed".equals(name)) {
                meters.counter("relay.updates.failed", "model", model, "state", value).increment();
            } else {
                meters.timer("relay.updates.phase", "model", model, "phase", name)
                        .record(Duration.ofMillis(Long.parseLong(value)));
            }
        }
    }

    private static boolean verificationClaimed(Reply result) {
        return result.items(1).stream().anyMatch(t -> t.startsWith("verify:"));
    }
}
