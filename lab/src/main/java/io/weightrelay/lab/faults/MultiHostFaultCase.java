package io.weightrelay.lab.faults;

/**
 * A case that needs the multi-host lab (root, network namespaces): {@code ./relay faults} runs it
 * with {@code --hosts} and says so when it does not; {@code FaultSuiteTest} always runs it, and it
 * fails with the reason where the multi-host lab cannot start.
 */
interface MultiHostFaultCase extends FaultCase {}
