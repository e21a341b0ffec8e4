/**
 * How the services call each other: {@link io.weightrelay.service.client.RemoteCalls} (retry and
 * circuit breaker from configuration) around a generated client built by client-kit's {@code
 * RelayClients}, whose errors {@code RemoteProblem} decodes.
 */
package io.weightrelay.service.client;
