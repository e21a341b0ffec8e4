/**
 * The identities control-api passes around instead of loose strings and numbers: {@link
 * io.weightrelay.reshard.manifest.GenerationId} (a model's generation) and {@link
 * io.weightrelay.control.identity.SessionKey} (an update session: a generation and a rollout
 * group). Built at the REST controllers from path variables; this package depends on nothing else
 * in control-api, so every feature package, {@code redis} included, can use it without a cycle.
 */
package io.weightrelay.control.identity;
