package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import org.junit.jupiter.api.Test;

/**
 * The per-generation and per-session key strings, spelled out: the Lua scripts, the lab's fault
 * cases and data already in Redis use the same layout, so taking identity records must not move a
 * single character.
 */
class RedisKeysTest {

    private final RedisKeys keys = new RedisKeys(new RedisKeyProperties("wr:"));
    private final GenerationId generation = new GenerationId("llama-8b", 12);
    private final SessionKey session = new SessionKey(generation, "rollout-a");

    @Test
    void perGenerationKeys() {
        assertThat(keys.generation(generation)).isEqualTo("wr:gen:llama-8b:12");
        assertThat(keys.objects(generation)).isEqualTo("wr:gen-objects:llama-8b:12");
        assertThat(keys.leases(generation)).isEqualTo("wr:gen-leases:llama-8b:12");
        assertThat(keys.checkpoint(generation)).isEqualTo("wr:checkpoint:llama-8b:12");
    }

    @Test
    void perSessionKeys() {
        assertThat(keys.session(session)).isEqualTo("wr:update:llama-8b:12:rollout-a");
        assertThat(keys.participants(session))
                .isEqualTo("wr:update-participants:llama-8b:12:rollout-a");
        assertThat(keys.sessionChecksums(session))
                .isEqualTo("wr:update-checksums:llama-8b:12:rollout-a");
        assertThat(keys.sessionSent(session)).isEqualTo("wr:update-sent:llama-8b:12:rollout-a");
        assertThat(keys.sessionChannel(session))
                .isEqualTo("wr:events:update:llama-8b:12:rollout-a");
        assertThat(keys.eventPattern()).isEqualTo("wr:events:*");
    }

    @Test
    void sessionKeyBuiltEitherWayIsOneKey() {
        assertThat(new SessionKey(new GenerationId("llama-8b", 12), "rollout-a"))
                .isEqualTo(session);
        assertThat(session.model()).isEqualTo("llama-8b");
        assertThat(session.generation()).isEqualTo(12);
        assertThat(session).hasToString("llama-8b@g12/rollout-a");
    }
}
