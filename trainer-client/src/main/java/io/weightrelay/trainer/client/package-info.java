/**
 * The publish protocol as a trainer hook calls it: the coordinator opens a generation and gets the
 * publisher assignment; every rank maps its node's staging area, reserves, writes the tensors it is
 * assigned, hands them over in byte-bounded batches (one REST call per batch), finishes the
 * iteration even after a failure, and the coordinator commits or aborts.
 */
package io.weightrelay.trainer.client;
