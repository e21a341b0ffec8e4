package io.weightrelay.control.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.generation.GenerationQueries;
import io.weightrelay.control.generation.ManifestStore;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.registry.PlacementTemplates;
import io.weightrelay.control.registry.Registry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.databind.json.JsonMapper;

/**
 * Two control-api instances (two plan services sharing only Redis) asked for the same new plan at
 * once compute it once: the Redis lock, not the per-instance single flight, decides.
 */
class PlanComputedOnceAcrossInstancesTest extends ControlApiTestSupport {

    @Autowired StringRedisTemplate redis;
    @Autowired RedisTemplate<String, byte[]> bytesRedisTemplate;
    @Autowired RedisKeys keys;
    @Autowired RedisGuard guard;
    @Autowired JsonMapper mapper;
    @Autowired GenerationQueries generations;
    @Autowired ManifestStore manifests;
    @Autowired Registry registry;
    @Autowired PlacementTemplates templates;
    @Autowired PlanProperties properties;

    private PlanService instance(MeterRegistry meters) {
        return new PlanService(
                redis,
                bytesRedisTemplate,
                keys,
                guard,
                mapper,
                generations,
                manifests,
                registry,
                templates,
                properties,
                new PlanComputations(),
                meters);
    }

    @Test
    void twoInstancesComputeANewPlanOnce() throws Exception {
        String model = newModel();
        long g = publish(model, 1);
        for (String node : List.of("r0", "r1", "r2")) {
            registerLoader(node + "-" + model, compatLoader(model, "grp", node + "-" + model, 2));
        }
        SimpleMeterRegistry metersA = new SimpleMeterRegistry();
        SimpleMeterRegistry metersB = new SimpleMeterRegistry();
        List<PlanService> instances = List.of(instance(metersA), instance(metersB));
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<PlanSummary>> results = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            PlanService service = instances.get(i % 2);
            results.add(
                    pool.submit(
                            () -> {
                                start.await();
                                return service.resolve(new PlanRequest(model, g, "grp"));
                            }));
        }
        start.countDown();
        List<PlanSummary> summaries = new ArrayList<>();
        for (Future<PlanSummary> r : results) {
            summaries.add(r.get());
        }
        pool.shutdown();
        assertThat(summaries.stream().map(PlanSummary::getPlanId).distinct()).hasSize(1);
        assertThat(summaries.stream().filter(s -> !s.getCached())).hasSize(1);
        double computed =
                metersA.counter("relay.plans.cache", "result", "miss").count()
                        + metersB.counter("relay.plans.cache", "result", "miss").count();
        assertThat(computed).isEqualTo(1.0);
    }
}
