/**
 * The client kit: everything written by hand about calling a relay service, beside the clients the
 * openapi module generates from the contracts (which holds nothing else).
 *
 * <ul>
 *   <li>{@link io.weightrelay.api.RelayClients} builds every generated client (control-api,
 *       publisher, loader) from an {@link io.weightrelay.api.Endpoint}: base URLs failed over by
 *       {@link io.weightrelay.api.BaseUrlFailover}, bearer token, timeouts, and gzip both ways when
 *       asked ({@link io.weightrelay.api.GzipRequestBodies}, {@link
 *       io.weightrelay.api.GzipResponses}).
 *   <li>{@link io.weightrelay.api.RemoteProblem} decodes an error answer (RFC 9457) once for every
 *       client; {@link io.weightrelay.api.RemoteCallException} is what each client's own failure
 *       extends.
 *   <li>{@link io.weightrelay.api.ControlManifests} maps the contract's manifests to reshard's, for
 *       the clients that plan.
 *   <li>The loaders' and publishers' side of control-api's protocol, written once for the services
 *       and the lab's {@code bench control-plane} (which plays them and must speak as they do): a
 *       loader's {@link io.weightrelay.api.PlacementTemplates} (register with template digests,
 *       upload what control-api lacks), {@link io.weightrelay.api.PrepareRequests} (the prepare
 *       call's body), {@link io.weightrelay.api.PlanSlices} (a slice, gzip on the wire) and {@link
 *       io.weightrelay.api.EncodedBody} (a binary answer as it came, inflated on demand); and a
 *       publisher's, {@link io.weightrelay.api.StoredObject} (an object it stored, and the body
 *       that registers such objects).
 * </ul>
 *
 * <p><b>Retries are the caller's policy, not the kit's</b>: the services wrap each call in
 * service-common's {@code RemoteCalls} (Resilience4j, configured per call name in their {@code
 * application.yaml}), the trainer client waits out 503 and 429 answers by their {@code
 * Retry-After}, the lab's calls are not retried; who retries what is one table, in
 * docs/architecture.md ("Calling a service"). The kit does not depend on Resilience4j, so that a
 * trainer process takes nothing with it but Spring's web client.
 *
 * <p>The package keeps the name it had when these classes lived in the openapi module, so that
 * moving them changed no import.
 */
package io.weightrelay.api;
