/**
 * The object store as control-api sees it: a small port ({@link
 * io.weightrelay.control.store.ObjectStore}) to remove a generation's objects and ask where they
 * live, implemented by the data plane's store client.
 */
package io.weightrelay.control.store;
