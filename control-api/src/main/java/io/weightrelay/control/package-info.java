/**
 * control-api: generations, registry, cached routing plans and update sessions, kept in Redis.
 *
 * <p>A bean that only holds its injected collaborators is a record of them (nothing here is
 * proxied, so beans may be final); one that also keeps state of its own (caches, counters, pools)
 * stays a class.
 */
package io.weightrelay.control;
