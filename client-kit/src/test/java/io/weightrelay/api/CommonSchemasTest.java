package io.weightrelay.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every schema of {@code common.yaml} that becomes a class is generated once, into {@code
 * io.weightrelay.api.common.model}, and no contract (server or client) has a copy of its own: the
 * openapi module maps each to the common class ({@code common.schemas} in its pom), and a schema
 * added to common.yaml without a mapping would be generated again beside every contract that uses
 * it. Reads common.yaml as the openapi jar serves it.
 */
class CommonSchemasTest {

    private static final String COMMON = "io.weightrelay.api.common.model.";

    private static final List<String> CONTRACT_MODELS =
            List.of(
                    "io.weightrelay.api.control.model.",
                    "io.weightrelay.api.control.client.model.",
                    "io.weightrelay.api.publisher.model.",
                    "io.weightrelay.api.publisher.client.model.",
                    "io.weightrelay.api.loader.model.",
                    "io.weightrelay.api.loader.client.model.");

    @Test
    void eachCommonSchemaIsOneClassAndNoContractHasACopy() throws IOException {
        Map<String, Boolean> schemas = commonSchemas();
        assertThat(schemas).containsKeys("WorkerPlacement", "TargetFragment", "Problem", "Dtype");
        List<String> missing = new ArrayList<>();
        List<String> copies = new ArrayList<>();
        for (Map.Entry<String, Boolean> s : schemas.entrySet()) {
            if (s.getValue() && !exists(COMMON + s.getKey())) {
                missing.add(s.getKey());
            }
            for (String contract : CONTRACT_MODELS) {
                if (exists(contract + s.getKey())) {
                    copies.add(contract + s.getKey());
                }
            }
        }
        assertThat(missing).as("common schemas without their class in " + COMMON).isEmpty();
        assertThat(copies).as("common schemas generated again for a contract").isEmpty();
    }

    /** common.yaml's schemas, each with whether it becomes a class (an object or an enum). */
    private static Map<String, Boolean> commonSchemas() throws IOException {
        String yaml;
        try (InputStream in =
                CommonSchemasTest.class
                        .getClassLoader()
                        .getResourceAsStream("openapi/common.yaml")) {
            assertThat(in).as("openapi/common.yaml on the class path").isNotNull();
            yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        String schemas =
                yaml.substring(yaml.indexOf("\n  schemas:\n"), yaml.indexOf("\n  responses:\n"));
        Matcher name = Pattern.compile("(?m)^    ([A-Za-z0-9]+):$").matcher(schemas);
        List<Integer> starts = new ArrayList<>();
        List<String> names = new ArrayList<>();
        while (name.find()) {
            starts.add(name.start());
            names.add(name.group(1));
        }
        Map<String, Boolean> out = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            String body =
                    schemas.substring(
                            starts.get(i),
                            i + 1 < starts.size() ? starts.get(i + 1) : schemas.length());
            boolean isClass =
                    body.contains("\n      type: object") || body.contains("\n      enum:");
            out.put(names.get(i), isClass);
        }
        return out;
    }

    private static boolean exists(String className) {
        try {
            Class.forName(className, false, CommonSchemasTest.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}
