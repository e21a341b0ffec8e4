/**
 * JavaCPP binding of the native data plane's C API and the Redis metadata access. Nothing here is
 * API: services use {@code io.weightrelay.dataplane} only.
 */
package io.weightrelay.dataplane.internal;
