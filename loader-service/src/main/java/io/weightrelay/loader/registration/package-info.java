/**
 * The one registration manager for store read destinations and Transfer Engine write destinations,
 * keyed by (epoch, instance, device, base, size): provisional until every loader has prepared, then
 * persistent and reused across generations while nothing changed; a reconnect invalidates older
 * epochs; teardown unregisters exactly the bases it registered.
 */
package io.weightrelay.loader.registration;
