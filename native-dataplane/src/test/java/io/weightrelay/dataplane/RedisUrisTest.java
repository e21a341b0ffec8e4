package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Redis URIs with credentials: composed from Spring Boot's properties, never printed in full. */
class RedisUrisTest {

    @Test
    void passwordsAreMaskedInEveryForm() {
        assertThat(RedisUris.mask("redis://relay:s3cret@redis:6379"))
                .isEqualTo("redis://relay:****@redis:6379");
        assertThat(RedisUris.mask("rediss://s3cret@redis:6380/0"))
                .isEqualTo("rediss://****@redis:6380/0");
        assertThat(RedisUris.mask("redis://redis:6379")).isEqualTo("redis://redis:6379");
        assertThat(RedisUris.mask("redis://relay:p%40ss@redis:6379")).doesNotContain("p%40ss");
        assertThat(RedisUris.mask(null)).isNull();
    }

    @Test
    void credentialsAndTlsComeFromTheServicePropertiesUnlessTheUriHasItsOwn() {
        assertThat(RedisUris.withCredentials("redis://redis:6379", "relay", "p@ss word", false))
                .isEqualTo("redis://relay:p%40ss%20word@redis:6379");
        assertThat(RedisUris.withCredentials("redis://redis:6379", null, "pw", true))
                .isEqualTo("rediss://pw@redis:6379");
        assertThat(RedisUris.withCredentials("redis://own:x@redis:6379", "relay", "pw", false))
                .isEqualTo("redis://own:x@redis:6379");
        assertThat(RedisUris.withCredentials("redis://redis:6379", "relay", "", false))
                .isEqualTo("redis://redis:6379");
        assertThat(RedisUris.hasCredentials("redis://redis:6379")).isFalse();
        assertThat(RedisUris.hasCredentials("redis://a:b@redis:6379")).isTrue();
    }

    @Test
    void aConfigNeverPrintsTheRedisPassword() {
        DataplaneConfig config =
                DataplaneConfig.builder("n")
                        .redisUri("redis://relay:s3cret-h9@127.0.0.1:6379")
                        .build();
        assertThat(config.toString()).contains("relay:****@").doesNotContain("s3cret-h9");
    }
}
