package io.weightrelay.control.redis;

import java.util.List;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.script.DefaultRedisScript;
import org.springframework.data.redis.core.script.RedisScript;

/** Loads the Lua scripts under {@code scripts/}; each answers a list whose first item is a code. */
public final class Scripts {

    private Scripts() {}

    @SuppressWarnings({"unchecked", "rawtypes"})
    public static RedisScript<List<Object>> load(String name) {
        DefaultRedisScript<List> script = new DefaultRedisScript<>();
        script.setLocation(new ClassPathResource("scripts/" + name + ".lua"));
        script.setResultType(List.class);
        return (RedisScript<List<Object>>) (RedisScript) script;
    }
}
