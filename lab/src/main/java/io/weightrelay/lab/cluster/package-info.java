/**
 * Starting the real services as child JVM processes on loopback ports, for the demo and the
 * end-to-end benchmarks: {@link io.weightrelay.testkit.process.ServiceProcess} is one service,
 * {@link io.weightrelay.lab.cluster.LabCluster} a whole lab that stops everything it started.
 */
package io.weightrelay.lab.cluster;
