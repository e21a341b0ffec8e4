package io.weightrelay.service.dataplane;

import io.weightrelay.dataplane.MetadataException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * A service whose data plane cannot reach its Redis at start (the publisher creates and registers
 * its segment there before it serves) refuses to start; this turns the failure buried in a chain of
 * bean-creation exceptions into Spring Boot's start-up report, naming the Redis, the property that
 * chose it and what to do, so whoever started the service reads why in seconds rather than watching
 * a health check that never turns green. A running service's data plane reconnects on its own after
 * an outage; only the start needs Redis there.
 */
class DataplaneRedisFailureAnalyzer extends AbstractFailureAnalyzer<MetadataException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, MetadataException cause) {
        return DataplaneRedis.unreachable(cause)
                .map(
                        unreachable ->
                                new FailureAnalysis(
                                        unreachable.sentence()
                                                + ". The data plane keeps its store directory and"
                                                + " segment descriptors there, so this service"
                                                + " cannot start without it.",
                                        "Start Redis at "
                                                + unreachable.address()
                                                + " (Debian: apt-get install redis-server), or set "
                                                + DataplaneRedis.PROPERTY
                                                + " to the Redis the deployment runs; its user,"
                                                + " password and TLS come from spring.data.redis.*"
                                                + " unless the URI carries its own.",
                                        cause))
                .orElse(null);
    }
}
