package io.weightrelay.control.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.stereotype.Component;

/**
 * Asks Redis itself, on a connection of its own (so a large value in flight on the shared one
 * cannot delay the answer), whether it is there: while the {@code redis} breaker is open or
 * half-open, and after calls timed out. A PONG closes the breaker at once, so control-api serves
 * again within one probe interval of Redis answering, whatever the traffic; silence after command
 * timeouts opens it (Redis hangs). The breaker's own counting sees only lost connections.
 *
 * <p>A PONG on the probe's fresh connection is not enough to close the breaker: the shared
 * connection every request uses reconnects on its own backoff (up to a second after Redis returns),
 * and closing before it has would let the first requests fail with "not connected" and open the
 * breaker again for its whole wait. So the breaker closes only once the shared connection answers a
 * PING too.
 *
 * <p>Until Redis has answered once, it also asks at every interval and says so in the log: when
 * Redis has not answered for {@code relay.redis.unreachable-report-after} (2 s), one ERROR line
 * naming the address and why, once it failed {@value #FAILURES_BEFORE_REPORT} probes in a row
 * spanning that time ({@value #UNREACHABLE}...), repeated every half minute while it lasts, and one
 * INFO line ({@value #ANSWERS}...) once it answers. So a control-api started without its Redis says
 * so in seconds (an operator, or the lab waiting for it to turn healthy, reads why), and serves
 * without a restart once Redis is there.
 *
 * <p>It asks from a thread of its own, not the context's scheduler: the scheduled tasks there all
 * call Redis (each up to its command timeout while Redis hangs), and the probe is what must run
 * then.
 */
@Component
class RedisProbe implements DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(RedisProbe.class);

    /** How the line that says Redis does not answer begins; the lab's health wait looks for it. */
    static final String UNREACHABLE = "cannot reach Redis at ";

    /** How the line that says Redis answers (after it did not) begins. */
    static final String ANSWERS = "Redis at ";

    private static final long REPEAT_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(30);

    /**
     * Failed probes in a row before the first report: one handshake that times out on a loaded
     * machine (a JVM just started, its event loop cold) is no verdict, and a lab reading the line
     * gives up on the service.
     */
    private static final int FAILURES_BEFORE_REPORT = 3;

    private final RedisGuard guard;
    private final RedisClient client;
    private final RedisConnectionFactory shared;
    private final String address;
    private final long intervalMs;
    private final long reportAfterNanos;
    private final long startedNanos = System.nanoTime();
    private StatefulRedisConnection<String, String> connection;
    private String lastFailure;
    private volatile boolean answeredOnce;
    private long reportedNanos;
    private boolean reported;
    private long failingSinceNanos;
    private int failures;
    private final ScheduledExecutorService thread =
            Executors.newSingleThreadScheduledExecutor(
                    runnable -> {
                        Thread t = new Thread(runnable, "redis-probe");
                        t.setDaemon(true);
                        return t;
                    });

    RedisProbe(
            RedisGuard guard,
            RedisConnectionFactory shared,
            @Value("${spring.data.redis.host:127.0.0.1}") String host,
            @Value("${spring.data.redis.port:6379}") int port,
            @Value("${spring.data.redis.username:}") String username,
            @Value("${spring.data.redis.password:}") String password,
            @Value("${spring.data.redis.ssl.enabled:false}") boolean ssl,
            @Value("${relay.redis.probe-timeout-ms:500}") long timeoutMs,
            @Value("${relay.redis.probe-interval-ms:500}") long intervalMs,
            @Value("${relay.redis.unreachable-report-after:2s}") Duration reportAfter) {
        this.guard = guard;
        this.shared = shared;
        this.address = host + ":" + port + (ssl ? " (TLS)" : "");
        this.intervalMs = intervalMs;
        this.reportAfterNanos = reportAfter.toNanos();
        RedisURI.Builder uri =
                RedisURI.builder()
                        .withHost(host)
                        .withPort(port)
                        .withSsl(ssl)
                        .withTimeout(Duration.ofMillis(timeoutMs));
        if (!password.isEmpty() && !username.isEmpty()) {
            uri.withAuthentication(username, password.toCharArray());
        } else if (!password.isEmpty()) {
            uri.withPassword(password.toCharArray());
        }
        this.client = RedisClient.create(uri.build());
        thread.scheduleWithFixedDelay(
                this::probeLogged, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }

    private void probeLogged() {
        try {
            probe();
        } catch (RuntimeException e) {
            log.error("Redis probe failed; asking again in {} ms", intervalMs, e);
        }
    }

    void probe() {
        if (!answeredOnce) {
            untilFirstAnswer();
            return;
        }
        CircuitBreaker.State state = guard.state();
        long timeouts = guard.takeTimeouts();
        if (state == CircuitBreaker.State.CLOSED && timeouts == 0) {
            return;
        }
        if (answers()) {
            if (state != CircuitBreaker.State.CLOSED && sharedAnswers()) {
                log.info(
                        "Redis at {} answers again: closing the {} circuit ({})",
                        address,
                        RedisGuard.NAME,
                        state);
                guard.redisAnswers();
            }
        } else if (state == CircuitBreaker.State.CLOSED) {
            log.warn(
                    "Redis at {} did not answer a probe after {} command timeout(s): opening the {}"
                            + " circuit ({})",
                    address,
                    timeouts,
                    RedisGuard.NAME,
                    lastFailure);
            guard.redisSilent();
        }
    }

    /**
     * Start-up: asks Redis until it first answers, and reports in the log how long it does not (see
     * the class comment). The breaker is left to the requests meanwhile.
     */
    private void untilFirstAnswer() {
        long now = System.nanoTime();
        if (answers()) {
            answeredOnce = true;
            if (reported) {
                log.info(
                        "{}{} answers after {} s: control-api serves",
                        ANSWERS,
                        address,
                        (now - startedNanos) / 1_000_000_000L);
            }
            return;
        }
        if (failingSinceNanos == 0) {
            failingSinceNanos = now;
        }
        failures++;
        if (failures < FAILURES_BEFORE_REPORT
                || now - failingSinceNanos < reportAfterNanos
                || (reported && now - reportedNanos < REPEAT_NANOS)) {
            return;
        }
        log.error(
                "{}{} (spring.data.redis.host and port): {}; control-api answers 503"
                        + " redis-unavailable and /actuator/health DOWN until it does, asking"
                        + " again every {} ms",
                UNREACHABLE,
                address,
                lastFailure,
                intervalMs);
        reported = true;
        reportedNanos = now;
    }

    private synchronized boolean answers() {
        try {
            if (connection == null || !connection.isOpen()) {
                close();
                connection = client.connect();
            }
            String answer = connection.sync().ping();
            lastFailure = "it answered " + answer;
            return "PONG".equals(answer);
        } catch (RuntimeException e) {
            lastFailure = RedisFailures.describe(e);
            close();
            return false;
        }
    }

    /** Whether the connection requests share has reconnected (Lettuce does so on its own). */
    private boolean sharedAnswers() {
        try (RedisConnection connection = shared.getConnection()) {
            return "PONG".equals(connection.ping());
        } catch (RuntimeException e) {
            log.debug(
                    "Redis answers the probe but not yet the shared connection: {}", e.toString());
            return false;
        }
    }

    private synchronized void close() {
        if (connection != null) {
            try {
                connection.close();
            } catch (RuntimeException e) {
                // already gone
            }
            connection = null;
        }
    }

    @Override
    public void destroy() throws InterruptedException {
        thread.shutdownNow();
        thread.awaitTermination(2, TimeUnit.SECONDS);
        close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
}
