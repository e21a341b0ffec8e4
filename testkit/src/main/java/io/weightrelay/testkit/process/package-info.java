/**
 * Child processes a test or the lab starts and stops: {@link
 * io.weightrelay.testkit.process.ChildProcess} (a process with its output in a log file, killed or
 * stopped, its log's tail for error messages) and {@link
 * io.weightrelay.testkit.process.ServiceProcess} (one service from its {@code -exec} jar or main
 * class on a free loopback port, waited for until healthy) and {@link
 * io.weightrelay.testkit.process.ChildJvm} (a test's main class driven over a line channel). JDK
 * only: the lab ships with it.
 */
package io.weightrelay.testkit.process;
