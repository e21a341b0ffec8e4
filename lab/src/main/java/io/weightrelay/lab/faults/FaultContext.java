package io.weightrelay.lab.faults;

import java.nio.file.Path;

/**
 * What the suite gives every case: the model to run, whether the multi-host lab (network
 * namespaces, root) is available, and a directory for the case's logs and files.
 *
 * @param model the catalog model the labs serve, {@code tiny} in tests
 * @param multiHost whether cases may use the multi-host lab
 * @param workDir a directory the case may write into; the suite removes it
 */
public record FaultContext(String model, boolean multiHost, Path workDir) {}
