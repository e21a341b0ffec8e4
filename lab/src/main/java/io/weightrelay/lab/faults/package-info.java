/**
 * The fault suite behind {@code ./relay faults}: each case injects one real fault into a running
 * lab and proves that nothing partial or corrupted is served and nothing committed is lost.
 */
package io.weightrelay.lab.faults;
