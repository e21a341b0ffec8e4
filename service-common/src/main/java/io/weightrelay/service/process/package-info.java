/**
 * Starting a service as a child JVM from its executable jar on a free loopback port: what the lab
 * and the end-to-end benchmarks run a cluster with, and what a service's tests use to run the real
 * service it talks to. JDK only.
 */
package io.weightrelay.service.process;
