package io.weightrelay.control.registry;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.redis.RedisKeys;
import java.time.Instant;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * A group's loaders are listed at every prepare and every plan resolution; their workers (tens of
 * kilobytes of JSON per loader) are read and parsed once per registration, and a listing after a
 * re-registration shows the new one, also when an emptied Redis handed out the same epoch again.
 */
class LoaderListingTest extends ControlApiTestSupport {

    private static final int LISTINGS = 20;

    @Autowired StringRedisTemplate redis;
    @Autowired RedisKeys keys;

    @Test
    void listingsReadEachRegistrationsWorkersOnce() {
        String model = newModel();
        registerLoader(model + "-a", compatLoader(model, "grp", "node-a", 2));
        registerLoader(model + "-b", compatLoader(model, "grp", "node-b", 2));
        assertThat(loaders(model)).hasSize(2);

        long before = hgetalls();
        for (int i = 0; i < LISTINGS; i++) {
            List<Loader> listed = loaders(model);
            assertThat(listed)
                    .extracting(Loader::getInstance)
                    .containsExactly(model + "-a", model + "-b");
            assertThat(listed.get(0).getWorkers()).hasSize(2);
        }
        // Reading every hash whole, as before, made 2 per listing; other tests running beside
        // this one may make a few.
        assertThat(hgetalls() - before).isLessThan(LISTINGS / 2);
    }

    @Test
    void aReRegistrationThroughAnotherReplicaIsListedWithItsNewBuffers() {
        String model = newModel();
        String instance = listedWithBuffer(model, "rx-first");

        // Another control-api registered it again: this one's parsed copy is of the old epoch.
        String key = keys.loader(instance);
        long epoch = Long.parseLong((String) redis.opsForHash().get(key, "epoch"));
        reRegisterBehindThisReplica(key, "rx-first", "rx-second");
        redis.opsForHash().put(key, "epoch", String.valueOf(epoch + 1));

        assertThat(buffer(model).getSegment()).isEqualTo("rx-second");
    }

    @Test
    void aRegistrationThatReusesAnEpochAfterRedisLostItIsListedAsNew() {
        String model = newModel();
        String instance = listedWithBuffer(model, "rx-before");

        // As after a Redis restart without persistence, the counter handed the same epoch to a
        // new registration (made through another control-api): only its time tells it apart.
        reRegisterBehindThisReplica(keys.loader(instance), "rx-before", "rx-after");

        assertThat(buffer(model).getSegment()).isEqualTo("rx-after");
    }

    /** Rewrites a registration's workers and time as another control-api's registration would. */
    private void reRegisterBehindThisReplica(String key, String segment, String replacement) {
        String workers = (String) redis.opsForHash().get(key, "workers");
        assertThat(workers).contains(segment);
        redis.opsForHash().put(key, "workers", workers.replace(segment, replacement));
        redis.opsForHash().put(key, "registeredAt", Instant.now().plusSeconds(1).toString());
    }

    /**
     * Registers {@code model}'s loader {@code <model>-a} with its buffer in {@code segment}, seen
     * listed so through this replica; returns the instance.
     */
    private String listedWithBuffer(String model, String segment) {
        String instance = model + "-a";
        registerLoader(instance, loader(model, segment));
        assertThat(buffer(model).getSegment()).isEqualTo(segment);
        return instance;
    }

    private List<Loader> loaders(String model) {
        return List.of(read("/api/v1/loaders?model=" + model, Loader[].class));
    }

    private ReceiveBuffer buffer(String model) {
        List<Loader> listed = loaders(model);
        assertThat(listed).hasSize(1);
        return listed.get(0).getWorkers().get(0).getBuffers().get(0);
    }

    private static LoaderRegistration loader(String model, String segment) {
        WorkerPlacement worker =
                new WorkerPlacement(
                        "w0",
                        "node-a",
                        "eth0",
                        io.weightrelay.api.common.model.ConsumeMode.COMPAT,
                        List.of(new ReceiveBuffer("safetensors", segment, 1L << 20)));
        return new LoaderRegistration(model, "grp", "node-a", List.of(worker));
    }

    private long hgetalls() {
        Properties stats =
                redis.execute(
                        (RedisCallback<Properties>)
                                connection -> connection.serverCommands().info("commandstats"));
        String hgetall = stats.getProperty("cmdstat_hgetall");
        if (hgetall == null) {
            return 0;
        }
        // calls=N,usec=...
        String calls = hgetall.trim().split(",")[0];
        return Long.parseLong(calls.substring(calls.indexOf('=') + 1));
    }
}
