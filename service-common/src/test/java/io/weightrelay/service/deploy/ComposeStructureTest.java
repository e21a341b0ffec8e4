package io.weightrelay.service.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.service.dataplane.DataplaneProperties;
import io.weightrelay.service.dataplane.DataplaneSettings;
import java.io.IOException;
import java.io.Reader;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * The repository's {@code compose.yaml} has the deployment's shape (there is no Docker engine to
 * run it here, so it is checked as data): one container per service on an ordinary bridge network,
 * addressed by service name; IPC shared only between a trainer and its publisher or an engine and
 * its loader; every relay service's data plane bound to its container, advertised under its service
 * name, authenticated with the mounted secret, and accepted by the same {@link DataplaneSettings}
 * the services start with.
 */
class ComposeStructureTest {

    private static final Set<String> RELAY =
            Set.of("control-api", "publisher-0", "publisher-1", "loader-0", "loader-1");
    private static final Map<String, String> IPC_PAIRS =
            Map.of("sim-trainer", "service:publisher-0", "sim-rollout", "service:loader-0");

    private static Map<String, Object> compose;
    private static Map<String, Map<String, Object>> services;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void parse() throws IOException {
        LoaderOptions options = new LoaderOptions();
        options.setMaxAliasesForCollections(200);
        try (Reader in = Files.newBufferedReader(Path.of("..", "compose.yaml"))) {
            compose = new Yaml(options).load(in);
        }
        services = (Map<String, Map<String, Object>>) compose.get("services");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> environment(String service) {
        Map<String, String> out = new LinkedHashMap<>();
        Object env = services.get(service).get("environment");
        if (env != null) {
            ((Map<String, Object>) env).forEach((k, v) -> out.put(k, String.valueOf(v)));
        }
        return out;
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyServiceIsItsOwnHostOnOneBridgeNetwork() {
        Map<String, Object> networks = (Map<String, Object>) compose.get("networks");
        assertThat(networks).containsOnlyKeys("relay");
        assertThat(((Map<String, Object>) networks.get("relay")).get("driver")).isEqualTo("bridge");
        assertThat(services).doesNotContainKey("lab-host").containsKeys("redis");
        assertThat(services.keySet()).containsAll(RELAY);
        services.forEach(
                (name, service) -> {
                    assertThat(service).as(name).doesNotContainKey("network_mode");
                    assertThat((List<String>) service.get("networks"))
                            .as(name)
                            .containsExactly("relay");
                });
    }

    @Test
    void onlyATrainerAndItsPublisherOrAnEngineAndItsLoaderShareIpc() {
        services.forEach(
                (name, service) -> {
                    Object ipc = service.get("ipc");
                    if (IPC_PAIRS.containsKey(name)) {
                        assertThat(ipc).as(name).isEqualTo(IPC_PAIRS.get(name));
                    } else if (name.startsWith("publisher-") || name.startsWith("loader-")) {
                        assertThat(ipc).as(name).isEqualTo("shareable");
                        assertThat(service).as(name).containsKey("shm_size");
                    } else {
                        assertThat(ipc).as(name + " shares no memory").isNull();
                    }
                });
    }

    @Test
    @SuppressWarnings("unchecked")
    void servicesReachEachOtherByNameAndNeverByLoopback() {
        for (String name : RELAY) {
            Map<String, String> env = environment(name);
            assertThat(env.get("RELAY_DATAPLANE_ADVERTISEHOST")).as(name).isEqualTo(name);
            assertThat(env.get("RELAY_DATAPLANE_BINDHOST")).as(name).isEqualTo("0.0.0.0");
            assertThat(env.get("RELAY_DATAPLANE_REDISURI"))
                    .as(name)
                    .isEqualTo("redis://redis:6379");
            assertThat(env.get("SERVER_ADDRESS")).as(name).isEqualTo("0.0.0.0");
            env.forEach(
                    (k, v) ->
                            assertThat(v)
                                    .as(name + " " + k)
                                    .doesNotContain("127.0.0.1")
                                    .doesNotContain("localhost"));
            assertThat((List<String>) services.get(name).get("secrets"))
                    .as(name)
                    .containsExactly("dataplane");
            assertThat(env.get("RELAY_DATAPLANE_SECRETFILE"))
                    .as(name)
                    .isEqualTo("/run/secrets/dataplane");
        }
        assertThat(environment("control-api").get("SPRING_DATA_REDIS_HOST")).isEqualTo("redis");
        for (String p : List.of("publisher-0", "publisher-1")) {
            assertThat(environment(p).get("RELAY_PUBLISH_CONTROLAPIURL"))
                    .isEqualTo("http://control-api:8080");
        }
        for (String l : List.of("loader-0", "loader-1")) {
            assertThat(environment(l).get("RELAY_LOADER_CONTROLURL"))
                    .isEqualTo("http://control-api:8080");
        }
        Map<String, Object> secrets = (Map<String, Object>) compose.get("secrets");
        assertThat(secrets).containsKey("dataplane");
        assertThat(String.valueOf(((Map<String, Object>) secrets.get("dataplane")).get("file")))
                .contains("secrets/dataplane.secret");
        String commands =
                String.valueOf(services.get("sim-trainer").get("command"))
                        + services.get("sim-rollout").get("command");
        assertThat(commands).doesNotContain("127.0.0.1").contains("http://control-api:8080");
    }

    @Test
    void everyDataplaneVariableIsAPropertyAndTheSettingsStart(@TempDir Path dir)
            throws IOException {
        Set<String> components = new TreeSet<>();
        for (RecordComponent c : DataplaneProperties.class.getRecordComponents()) {
            components.add(c.getName().toLowerCase(Locale.ROOT));
        }
        Path secret = dir.resolve("dataplane.secret");
        Files.writeString(secret, "0123456789abcdef0123456789abcdef\n");
        for (String name : RELAY) {
            Map<String, Object> env = new HashMap<>();
            environment(name)
                    .forEach(
                            (k, v) -> {
                                if (k.startsWith("RELAY_DATAPLANE_")) {
                                    String property =
                                            k.substring("RELAY_DATAPLANE_".length())
                                                    .replace("_", "")
                                                    .toLowerCase(Locale.ROOT);
                                    assertThat(components).as(name + " " + k).contains(property);
                                    env.put(k, v);
                                }
                            });
            env.put("RELAY_DATAPLANE_SECRETFILE", secret.toString());
            MutablePropertySources sources = new MutablePropertySources();
            sources.addFirst(new SystemEnvironmentPropertySource("compose-systemEnvironment", env));
            DataplaneProperties properties =
                    new Binder(ConfigurationPropertySources.from(sources))
                            .bindOrCreate("relay.dataplane", DataplaneProperties.class);
            DataplaneSettings settings = new DataplaneSettings(properties);
            assertThat(settings.multiHost()).as(name).isTrue();
            assertThat(settings.authenticated()).as(name).isTrue();
            assertThat(settings.advertiseHost()).as(name).isEqualTo(name);
            assertThat(settings.advertisedUrl("", 8081))
                    .as(name)
                    .isEqualTo("http://" + name + ":8081");
        }
    }
}
