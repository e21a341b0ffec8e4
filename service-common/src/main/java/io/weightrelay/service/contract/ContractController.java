package io.weightrelay.service.contract;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * Serves the hand-written contracts ({@code openapi/*.yaml} from the openapi module) at {@code
 * /openapi/<name>.yaml}, so Swagger UI shows the contract the code is generated from, with its
 * descriptions, tags, examples and bearer scheme, instead of a document derived from the code.
 * Relative {@code $ref}s between the files resolve against the same path. The contract's {@code
 * servers} list becomes the serving origin, so "Try it out" calls this service.
 */
@RestController
public class ContractController {

    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]{0,63}\\.yaml");
    private static final Pattern SERVERS = Pattern.compile("(?m)^servers:\\n(?:[ \\t]+.*\\n)+");
    static final MediaType YAML = MediaType.parseMediaType("application/yaml;charset=UTF-8");

    @GetMapping("/openapi/{name}")
    public ResponseEntity<String> contract(@PathVariable String name) {
        if (!NAME.matcher(name).matches()) {
            throw notFound(name);
        }
        try (InputStream in = getClass().getClassLoader().getResourceAsStream("openapi/" + name)) {
            if (in == null) {
                throw notFound(name);
            }
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            return ResponseEntity.ok().contentType(YAML).body(servedHere(text));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the contract " + name, e);
        }
    }

    /** The contract with its {@code servers} replaced by this service's own origin. */
    static String servedHere(String contract) {
        return SERVERS.matcher(contract).replaceFirst("servers:\n  - url: /\n");
    }

    private static RelayException notFound(String name) {
        return new RelayException(
                CommonProblems.NOT_FOUND, "no contract named '" + name + "' is served here");
    }
}
