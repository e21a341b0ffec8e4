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
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

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
    @SuppressWarnings("unchecked")
    void theMonitoringProfileScrapesEveryServiceWithTheMetricsTokenOnly() throws IOException {
        for (String name : List.of("prometheus", "grafana")) {
            assertThat((List<String>) services.get(name).get("profiles"))
                    .as(name)
                    .containsExactly("monitoring");
        }
        for (String name : RELAY) {
            assertThat(environment(name).get("RELAY_SECURITY_TOKENS_METRICS_0_"))
                    .as(name + " accepts the scrape token")
                    .startsWith("${WR_METRICS_TOKEN:?");
        }
        assertThat(environment("prometheus").get("WR_METRICS_TOKEN"))
                .startsWith("${WR_METRICS_TOKEN:?");
        Map<String, Object> prometheus;
        try (Reader in =
                Files.newBufferedReader(Path.of("..", "docker", "monitoring", "prometheus.yml"))) {
            prometheus = new Yaml().load(in);
        }
        Set<String> targets = new java.util.TreeSet<>();
        for (Map<String, Object> job :
                (List<Map<String, Object>>) prometheus.get("scrape_configs")) {
            assertThat(job.get("metrics_path")).isEqualTo("/actuator/prometheus");
            Map<String, Object> auth = (Map<String, Object>) job.get("authorization");
            assertThat(auth).containsEntry("type", "Bearer");
            assertThat(auth).containsEntry("credentials_file", "/tmp/metrics.token");
            for (Map<String, Object> c : (List<Map<String, Object>>) job.get("static_configs")) {
                targets.addAll((List<String>) c.get("targets"));
            }
        }
        assertThat(targets)
                .containsExactlyInAnyOrder(
                        "control-api:8080",
                        "publisher-0:8081",
                        "publisher-1:8081",
                        "loader-0:8082",
                        "loader-1:8082");
        assertThat(String.valueOf(services.get("prometheus").get("command")))
                .contains("/tmp/metrics.token");
        assertThat((List<String>) services.get("grafana").get("volumes"))
                .anySatisfy(v -> assertThat(v).contains("grafana/provisioning"))
                .anySatisfy(v -> assertThat(v).contains("grafana/dashboards"));
        String dashboard = monitoring("grafana/dashboards/weight-relay.json");
        assertThat(dashboard).contains("\"uid\": \"weight-relay-prometheus\"");
        String datasource = monitoring("grafana/provisioning/datasources/prometheus.yaml");
        assertThat(datasource)
                .contains("uid: weight-relay-prometheus")
                .contains("url: http://prometheus:9090");
    }

    /**
     * The provisioned dashboard is a Grafana dashboard as data (there is no Grafana here to load
     * it): it parses, its panels have distinct ids and places, every query goes to the provisioned
     * Prometheus, and every {@code relay_*} metric it queries is documented in docs/metrics.md (the
     * lab's end-to-end test checks that the services expose each one). The provisioning files parse
     * and point at where compose mounts the dashboards.
     */
    @Test
    @SuppressWarnings("unchecked")
    void theDashboardParsesAndQueriesOnlyDocumentedMetrics() throws IOException {
        JsonNode dashboard =
                JsonMapper.builder()
                        .build()
                        .readTree(monitoring("grafana/dashboards/weight-relay.json"));
        assertThat(dashboard.path("uid").asString()).isEqualTo("weight-relay");
        String documented = Files.readString(Path.of("..", "docs", "metrics.md"));
        Set<Integer> ids = new java.util.HashSet<>();
        Set<String> places = new java.util.HashSet<>();
        Set<String> queried = new java.util.TreeSet<>();
        for (JsonNode panel : dashboard.path("panels")) {
            assertThat(ids.add(panel.path("id").asInt())).as("panel id " + panel).isTrue();
            JsonNode at = panel.path("gridPos");
            assertThat(places.add(at.path("x").asInt() + "," + at.path("y").asInt()))
                    .as("panel place " + panel.path("title"))
                    .isTrue();
            assertThat(panel.path("targets").size()).isPositive();
            for (JsonNode target : panel.path("targets")) {
                assertThat(target.path("datasource").path("uid").asString())
                        .isEqualTo("weight-relay-prometheus");
                java.util.regex.Matcher m =
                        java.util.regex.Pattern.compile("relay_[a-z_]+")
                                .matcher(target.path("expr").asString());
                while (m.find()) {
                    queried.add(m.group().replaceAll("_(sum|count|max)$", ""));
                }
            }
        }
        assertThat(ids).hasSizeGreaterThanOrEqualTo(12);
        assertThat(queried)
                .contains(
                        "relay_generations_publish_seconds",
                        "relay_registry_heartbeat_age_seconds",
                        "relay_loader_transport_bytes_total",
                        "relay_publisher_transport_bytes_total",
                        "relay_plans_cache_total")
                .allSatisfy(
                        name ->
                                assertThat(documented)
                                        .as("docs/metrics.md documents " + name)
                                        .contains("`" + name + "`"));
        Map<String, Object> provider =
                new Yaml().load(monitoring("grafana/provisioning/dashboards/weight-relay.yaml"));
        Map<String, Object> first = ((List<Map<String, Object>>) provider.get("providers")).get(0);
        assertThat(((Map<String, Object>) first.get("options")).get("path"))
                .isEqualTo("/var/lib/grafana/dashboards");
        assertThat((List<String>) services.get("grafana").get("volumes"))
                .contains("./docker/monitoring/grafana/dashboards:/var/lib/grafana/dashboards:ro");
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

    /** A file of the monitoring set-up, {@code docker/monitoring/<relative>}. */
    private static String monitoring(String relative) throws IOException {
        return Files.readString(Path.of("..", "docker", "monitoring").resolve(relative));
    }
}
