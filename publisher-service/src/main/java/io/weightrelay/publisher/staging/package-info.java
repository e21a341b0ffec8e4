/**
 * The node's shared-memory staging area: a pre-faulted file under {@code /dev/shm} that trainer
 * ranks map and write into, carved into reservations (one per batch), with back-pressure (429 and
 * {@code Retry-After}) when no contiguous room is left.
 */
package io.weightrelay.publisher.staging;
