package io.weightrelay.dataplane.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionException;
import java.net.ConnectException;
import org.junit.jupiter.api.Test;

/**
 * Which connect failures earn the one retry: only Lettuce losing its own handshake state with no
 * answer from Redis in the chain (seen under load as "RedisHandshakeHandler not registered" where
 * Redis had answered WRONGPASS).
 */
class MetadataConnectTest {
    @Test
    void lettuceLosingItsHandshakeStateIsRetriedOnce() {
        var lost =
                new RedisConnectionException(
                        "Unable to connect",
                        new IllegalStateException("RedisHandshakeHandler not registered"));
        assertThat(Metadata.lostInHandshake(lost)).isTrue();
    }

    @Test
    void anAnswerFromRedisOrAnUnreachableRedisIsReportedAtOnce() {
        var refused =
                new RedisConnectionException(
                        "Unable to connect",
                        new RedisCommandExecutionException("WRONGPASS invalid username-password"));
        var unreachable =
                new RedisConnectionException(
                        "Unable to connect", new ConnectException("Connection refused"));
        var answeredAfterState =
                new RedisConnectionException(
                        "Unable to connect",
                        new IllegalStateException(
                                "wrapped", new RedisCommandExecutionException("WRONGPASS")));
        assertThat(Metadata.lostInHandshake(refused)).isFalse();
        assertThat(Metadata.lostInHandshake(unreachable)).isFalse();
        assertThat(Metadata.lostInHandshake(answeredAfterState)).isFalse();
    }
}
