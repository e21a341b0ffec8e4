package io.weightrelay.control.generation;

import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Reply;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.springframework.stereotype.Component;

/**
 * How the generation scripts are called: no KEYS, and ARGV the key prefix, the model, then the
 * script's own arguments (a script derives every key of the model from the first two).
 */
@Component
class GenerationScripts {

    private final ScriptCall scripts;
    private final RedisKeys keys;

    GenerationScripts(ScriptCall scripts, RedisKeys keys) {
        this.scripts = scripts;
        this.keys = keys;
    }

    Reply run(String script, String model, String... rest) {
        return run(script, model, Arrays.asList(rest));
    }

    Reply run(String script, String model, List<String> rest) {
        List<String> args = new ArrayList<>(rest.size() + 2);
        args.add(keys.prefix());
        args.add(model);
        args.addAll(rest);
        return scripts.run(script, List.of(), args);
    }
}
