package io.weightrelay.lab;

import io.weightrelay.lab.cluster.LabCluster;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * The labs a test started: when the test fails, every service's log tail is printed while the
 * services still run, and after the test every lab is stopped, the last started first. A test class
 * registers one per test ({@code @RegisterExtension final RunningLabs labs = new RunningLabs();})
 * and takes each lab in with {@link #add}.
 */
final class RunningLabs implements TestExecutionExceptionHandler, AfterEachCallback {

    private final List<LabCluster> labs = new ArrayList<>();

    /** {@code lab}, stopped after the test and its logs printed if the test fails. */
    LabCluster add(LabCluster lab) {
        labs.add(lab);
        return lab;
    }

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable failure)
            throws Throwable {
        labs.forEach(LabCluster::dumpLogs);
        throw failure;
    }

    @Override
    public void afterEach(ExtensionContext context) {
        for (int i = labs.size() - 1; i >= 0; i--) {
            labs.get(i).close();
        }
        labs.clear();
    }
}
