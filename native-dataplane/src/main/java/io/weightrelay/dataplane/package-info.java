/**
 * The data plane of weight-relay: a Transfer Engine (batched one-sided transfers between registered
 * memory and shared-memory segments, local and tcp transports, write-with-notify, byte counters)
 * and a Mooncake-Store-shaped object store over it. Entry point: {@link
 * io.weightrelay.dataplane.Dataplane#open}.
 *
 * <p>All classes here are thread safe unless their Javadoc says otherwise; resource-owning classes
 * are {@link java.lang.AutoCloseable} with idempotent {@code close()}. Every failure is a {@link
 * io.weightrelay.dataplane.DataplaneException}.
 */
package io.weightrelay.dataplane;
