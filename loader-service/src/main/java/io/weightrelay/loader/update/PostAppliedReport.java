package io.weightrelay.loader.update;

import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlane.Report;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.instance.InstanceService;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports POST_APPLIED; one that does not reach control-api (its reply lost, control-api away) is
 * sent again every {@code relay.loader.heartbeat} until control-api answers, for at most {@link
 * #RETRIES} times: the report is idempotent, and it is what records the generation this loader
 * serves and releases its leases on the others. Without it, the group's session would end with this
 * loader unconfirmed and its old generation held by its beats. Given up when the loader registered
 * again (a new life confirms nothing of the old one) or control-api refused the report for good
 * (the session ended without it, or is gone).
 */
final class PostAppliedReport {
    private static final Logger log = LoggerFactory.getLogger(PostAppliedReport.class);

    /**
     * How often a POST_APPLIED that did not reach control-api is sent again, one heartbeat apart
     * (an hour at the default 5 s: control-api keeps a session that long).
     */
    static final int RETRIES = 720;

    private final ControlPlane control;
    private final InstanceService instances;
    private final LoaderProperties properties;
    private final ScheduledExecutorService resends;

    PostAppliedReport(
            ControlPlane control,
            InstanceService instances,
            LoaderProperties properties,
            ScheduledExecutorService resends) {
        this.control = control;
        this.instances = instances;
        this.properties = properties;
        this.resends = resends;
    }

    /**
     * Sends {@code instance}'s POST_APPLIED for {@code generation} with the update's {@code
     * durations} so far, for the session's {@code sessionAttempt} (null: none named), again later
     * if it must.
     */
    void send(
            Instance instance,
            long generation,
            Integer sessionAttempt,
            ControlPlane.Durations durations) {
        send(instance, generation, sessionAttempt, durations, 0);
    }

    private void send(
            Instance instance,
            long generation,
            Integer sessionAttempt,
            ControlPlane.Durations durations,
            int attempt) {
        if (attempt > 0
                && instances.current().map(i -> i.epoch() != instance.epoch()).orElse(true)) {
            log.warn(
                    "POST_APPLIED of {} for generation {} given up: the loader registered again",
                    instance.instanceId(),
                    generation);
            return;
        }
        try {
            control.report(
                    new SessionKey(
                            new GenerationId(instance.model(), generation), instance.group()),
                    Report.postApplied(instance.instanceId(), instance.epoch(), durations)
                            .inAttempt(sessionAttempt));
            if (attempt > 0) {
                log.info(
                        "POST_APPLIED of {} for generation {} reached control-api at attempt {}",
                        instance.instanceId(),
                        generation,
                        attempt + 1);
            }
        } catch (ControlPlaneException e) {
            boolean settled = e.refusedInput() || e.status() == 404;
            if (settled || attempt >= RETRIES) {
                log.warn("reporting POST_APPLIED failed for good: {}", e.getMessage());
                return;
            }
            log.warn(
                    "reporting POST_APPLIED failed, sending it again in {}: {}",
                    properties.heartbeat(),
                    e.getMessage());
            try {
                resends.schedule(
                        () -> send(instance, generation, sessionAttempt, durations, attempt + 1),
                        properties.heartbeat().toMillis(),
                        TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException shuttingDown) {
                log.warn("POST_APPLIED not sent again: the loader is stopping");
            }
        }
    }
}
