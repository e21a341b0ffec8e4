package io.weightrelay.lab;

import io.weightrelay.lab.cluster.LabCluster;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * One lab that the ordered tests of a class take turns on, so that a class whose tests all need the
 * same lab starts it once instead of once per test (starting seven service JVMs is most of such a
 * test's time on two cores). A test asks for the spec it needs; one lab runs at a time, so asking
 * for another spec stops the running one. When a test fails, every service's log tail is printed
 * and the lab is stopped: the next test starts a fresh one instead of inheriting a state nobody
 * proved usable. A class registers one statically ({@code @RegisterExtension static final
 * SharedTestLab shared = new SharedTestLab();}) and closes it in its {@code @AfterAll}.
 */
final class SharedTestLab implements TestExecutionExceptionHandler, AutoCloseable {

    private LabCluster lab;
    private LabCluster.Spec spec;
    private long step;

    /** The running lab of {@code wanted}, started now if none of that spec runs. */
    synchronized LabCluster lab(LabCluster.Spec wanted) throws Exception {
        if (lab != null && !spec.equals(wanted)) {
            close();
        }
        if (lab == null) {
            lab = LabCluster.start(wanted);
            spec = wanted;
            step = 0;
        }
        return lab;
    }

    /**
     * A trainer step not yet published on the running lab. A step opens one generation: publishing
     * a step again returns the generation it opened, so tests that share a lab take their steps
     * from here rather than counting from 0 each.
     */
    synchronized long nextStep() {
        return step++;
    }

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable failure)
            throws Throwable {
        synchronized (this) {
            if (lab != null) {
                lab.dumpLogs();
                close();
            }
        }
        throw failure;
    }

    @Override
    public synchronized void close() {
        if (lab != null) {
            try {
                lab.close();
            } finally {
                lab = null;
                spec = null;
            }
        }
    }
}
