/** The trainer side of weight-relay: the publish protocol library and the simulated trainer. */
package io.weightrelay.trainer;
