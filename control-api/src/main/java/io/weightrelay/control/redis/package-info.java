/**
 * Everything every feature needs from Redis: the key layout under the configured prefix, Lua
 * scripts, Resilience4j retry and circuit breaking around each call (a Redis outage becomes a 503
 * problem, never a stuck request), and pub/sub events that long-polls wait on.
 */
package io.weightrelay.control.redis;
