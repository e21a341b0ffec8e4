package io.weightrelay.lab.faults;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.lab.cluster.LabCluster;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.json.JsonMapper;

/**
 * The update sessions of the lab's group as control-api keeps them in the lab's Redis, read on a
 * connection of the case's own, opened before the update starts: a first connection costs more than
 * a whole update of the tiny model, and control-api's REST answers, on a loaded machine, can take
 * longer than a tiny model's whole apply.
 */
final class SessionWatch implements AutoCloseable {

    /** How long a frozen segment owner stays frozen before the case looks whether reads wait. */
    private static final Duration HELD = Duration.ofMillis(1500);

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final LabCluster lab;
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;

    SessionWatch(LabCluster lab) {
        this.lab = lab;
        this.client = RedisClient.create(lab.spec().redisUri());
        this.connection = client.connect();
        connection.sync().ping();
    }

    /**
     * The key of the group's session of {@code generation} ({@code update}), or its participants.
     */
    private String key(String kind, long generation) {
        return lab.controlPrefix() + kind + ":" + lab.spec().model() + ":" + generation + ":lab";
    }

    /**
     * Waits until the session of {@code generation} exists (the update is past its plan) or the
     * update ended; true when the session exists and the update still runs.
     */
    boolean awaitSession(long generation, Future<?> running) throws InterruptedException {
        String session = key("update", generation);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (System.nanoTime() < deadline && !running.isDone()) {
            if (connection.sync().exists(session) > 0) {
                return !running.isDone();
            }
            Thread.sleep(1);
        }
        return false;
    }

    /**
     * Waits until the session of {@code generation} is APPLYING, freezes the segment owner {@code
     * pid} (SIGSTOP) and, a moment later, checks that the session still applies with a loader short
     * of APPLIED: its reads of the frozen owner are in flight. Returns how it was caught, or null
     * after letting the owner run on (the apply ended first).
     */
    String freezeOwnerInApply(long generation, long pid) throws Exception {
        String session = key("update", generation);
        String participants = key("update-participants", generation);
        RedisCommands<String, String> redis = connection.sync();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            String state = redis.hget(session, "state");
            if (state == null || state.equals("PREPARING")) {
                Thread.onSpinWait();
                continue;
            }
            if (!state.equals("APPLYING")) {
                return null;
            }
            MidApply.signal("STOP", pid);
            Thread.sleep(HELD.toMillis());
            Map<String, String> phases = new TreeMap<>();
            redis.hgetall(participants)
                    .forEach(
                            (who, json) ->
                                    phases.put(who, JSON.readTree(json).path("phase").asString()));
            boolean reading =
                    "APPLYING".equals(redis.hget(session, "state"))
                            && phases.values().stream().anyMatch(p -> !p.equals("APPLIED"));
            if (reading) {
                return "with the session APPLYING, loaders "
                        + phases
                        + " "
                        + HELD.toMillis()
                        + " ms later";
            }
            MidApply.signal("CONT", pid);
            return null;
        }
        return null;
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown(0, 1, TimeUnit.SECONDS);
    }
}
