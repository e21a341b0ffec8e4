/** The cluster topology: trainer and rollout nodes, their NICs and NIC bandwidth. */
package io.weightrelay.reshard.topology;
