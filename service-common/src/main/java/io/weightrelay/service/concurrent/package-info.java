/** Threads of the services' background work (heartbeats, updates, publish and checkpoint pools). */
package io.weightrelay.service.concurrent;
