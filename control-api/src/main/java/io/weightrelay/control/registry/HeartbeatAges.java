package io.weightrelay.control.registry;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.weightrelay.control.redis.RedisTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * How long ago each live segment owner and loader last sent a heartbeat, as a scrape sees it:
 * {@code relay.registry.heartbeat.age{kind=owner|loader, id=<segment|instance>}} in seconds, and
 * how many of each kind are live ({@code relay.registry.live{kind}}). One series per registered
 * process, so the number of series is the deployment's size, never the model's; a process that
 * stops beating shows its age grow until its TTL ends, then drops out. Refreshed from Redis every
 * {@code relay.registry.heartbeat-ages-interval} (5 s); while Redis is away the last values stay.
 * Ages are measured on the Redis server's clock, which the heartbeats were stamped with: a replica
 * whose own clock is off shows the same ages as every other.
 */
@Component
class HeartbeatAges {

    private static final Logger log = LoggerFactory.getLogger(HeartbeatAges.class);

    private final Registry registry;
    private final RedisTime time;
    private final MultiGauge ages;
    private final MultiGauge live;

    HeartbeatAges(Registry registry, MeterRegistry meters, RedisTime time) {
        this.registry = registry;
        this.time = time;
        this.ages =
                MultiGauge.builder("relay.registry.heartbeat.age")
                        .baseUnit("seconds")
                        .description("seconds since each live owner's or loader's last heartbeat")
                        .register(meters);
        this.live =
                MultiGauge.builder("relay.registry.live")
                        .description("live segment owners and loaders")
                        .register(meters);
    }

    @Scheduled(
            fixedDelayString = "${relay.registry.heartbeat-ages-interval:5s}",
            initialDelayString = "${relay.registry.heartbeat-ages-interval:5s}")
    void refresh() {
        Map<String, Instant> owners;
        Map<String, Instant> loaders;
        Instant now;
        try {
            owners = registry.liveSegmentHeartbeats();
            loaders = registry.liveLoaderHeartbeats();
            now = time.now();
        } catch (RuntimeException e) {
            log.debug("heartbeat ages not refreshed: {}", e.toString());
            return;
        }
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        owners.forEach((segment, last) -> rows.add(row("owner", segment, last, now)));
        loaders.forEach((instance, last) -> rows.add(row("loader", instance, last, now)));
        ages.register(rows, true);
        live.register(
                List.of(
                        MultiGauge.Row.of(Tags.of("kind", "owner"), owners.size()),
                        MultiGauge.Row.of(Tags.of("kind", "loader"), loaders.size())),
                true);
    }

    private static MultiGauge.Row<?> row(String kind, String id, Instant last, Instant now) {
        double age = Math.max(0, Duration.between(last, now).toMillis()) / 1000.0;
        return MultiGauge.Row.of(Tags.of("kind", kind, "id", id), age);
    }
}
