package io.weightrelay.control.registry;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.DataplaneEngineName;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.redis.RedisKeys;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.databind.JsonNode;

/**
 * A loader names its data-plane engine when it registers, and control-api refuses one whose engine
 * could not exchange bytes with the deployment's: control-api runs the built-in engine here (the
 * test default), so a loader on Mooncake is refused naming itself and both engines, before anything
 * of it is stored; a loader registered while control-api ran another engine (its record says so)
 * keeps a newcomer of this engine out of its group, naming it.
 */
class DataplaneEngineRegistrationTest extends ControlApiTestSupport {

    private final String model = newModel();

    @Autowired private StringRedisTemplate redis;
    @Autowired private RedisKeys keys;

    private LoaderRegistration loader(String group, String node, DataplaneEngineName engine) {
        LoaderRegistration r = compatLoader(model, group, node, 1);
        r.setDataplaneEngine(engine);
        return r;
    }

    @Test
    void aLoaderOnControlApisEngineIsRegisteredWithIt() {
        Loader l =
                registerLoader(model + "-a", loader("g1", "node-a", DataplaneEngineName.BUILTIN));
        assertThat(l.getDataplaneEngine()).isEqualTo(DataplaneEngineName.BUILTIN);
        assertThat(ok(call("GET", "/api/v1/loaders/" + model + "-a", LOADER, null), Loader.class))
                .extracting(Loader::getDataplaneEngine)
                .isEqualTo(DataplaneEngineName.BUILTIN);
        assertThat(redis.opsForHash().get(keys.loader(model + "-a"), "dataplaneEngine"))
                .isEqualTo("builtin");

        // registered again without the field (a client older than it): not checked, not kept
        Loader again = registerLoader(model + "-a", loader("g1", "node-a", null));
        assertThat(again.getDataplaneEngine()).isNull();
        assertThat(redis.opsForHash().hasKey(keys.loader(model + "-a"), "dataplaneEngine"))
                .isFalse();
    }

    @Test
    void aLoaderOnAnotherEngineThanControlApisIsRefusedNamingItAndBothEngines() {
        String instance = model + "-mc";
        HttpResponse<String> refused =
                putLoader(instance, loader("g2", "node-b", DataplaneEngineName.MOONCAKE));

        assertProblem(refused, 409, "dataplane-engine-mismatch");
        JsonNode problem = json.readTree(refused.body());
        assertThat(problem.path("instanceId").asString()).isEqualTo(instance);
        assertThat(problem.path("dataplaneEngine").asString()).isEqualTo("mooncake");
        assertThat(problem.path("controlApiEngine").asString()).isEqualTo("builtin");
        assertThat(problem.path("detail").asString())
                .contains(instance, "mooncake", "builtin", "relay.dataplane.engine");
        assertThat(redis.hasKey(keys.loader(instance))).as("nothing of it is stored").isFalse();
    }

    @Test
    void aLiveLoaderOfTheGroupOnAnotherEngineKeepsANewcomerOutNamingIt() {
        String old = model + "-old";
        registerLoader(old, loader("g3", "node-c", DataplaneEngineName.BUILTIN));
        // as it stays registered when control-api was configured for Mooncake before this one
        redis.opsForHash().put(keys.loader(old), "dataplaneEngine", "mooncake");

        String instance = model + "-new";
        HttpResponse<String> refused =
                putLoader(instance, loader("g3", "node-d", DataplaneEngineName.BUILTIN));

        assertProblem(refused, 409, "dataplane-engine-mismatch");
        JsonNode problem = json.readTree(refused.body());
        assertThat(problem.path("instanceId").asString()).isEqualTo(instance);
        assertThat(problem.path("dataplaneEngine").asString()).isEqualTo("builtin");
        assertThat(problem.path("loaders").toString())
                .isEqualTo(json.writeValueAsString(List.of(old)));
        assertThat(problem.path("engines").toString()).isEqualTo("[\"mooncake\"]");
        assertThat(problem.path("detail").asString()).contains(instance, old, "g3");
        assertThat(redis.hasKey(keys.loader(instance))).isFalse();

        // another group's loaders are not its peers
        registerLoader(instance, loader("g4", "node-d", DataplaneEngineName.BUILTIN));
    }
}
