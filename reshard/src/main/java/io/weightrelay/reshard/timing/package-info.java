/**
 * The cluster time model: how long a plan's pipelined transfer takes on full-duplex NICs, and the
 * lower bound no plan can beat on the same topology and placement.
 */
package io.weightrelay.reshard.timing;
