/**
 * control-api: generations, registry, cached routing plans and update sessions, kept in Redis.
 *
 * <p>A controller only forwards to its services: it is a package-private record of them (nothing
 * here is proxied, so beans may be final). A service keeps its collaborators private (its Redis
 * access goes through it and its guard), so it stays a class.
 */
package io.weightrelay.control;
