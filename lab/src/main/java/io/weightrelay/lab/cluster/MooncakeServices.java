package io.weightrelay.lab.cluster;

import io.weightrelay.testkit.process.ServiceProcess;
import java.io.IOException;

/**
 * Puts the services this JVM starts on Mooncake: starts a {@link MooncakeLab} (the checkout's
 * {@code python/src} as the agents' package) and adds its {@link MooncakeLab#serviceJvmOptions()}
 * to the JVM options every service is started with ({@value ServiceProcess#JVM_OPTIONS_PROPERTY})
 * until {@link #close}, which puts them back as they were and removes the master and its namespace.
 * How the demo and the benches run a lab on {@code relay.dataplane.engine=mooncake}; one at a time
 * per JVM, since the options are the JVM's.
 */
public final class MooncakeServices implements AutoCloseable {

    /** Mooncake's master could not be started (not root, no {@code ip netns}, no wheel). */
    public static final class StartException extends Exception {
        public StartException(IOException cause) {
            super(
                    "--engine mooncake could not start mooncake_master in a network namespace of"
                            + " its own (it needs root, ip netns and the pinned wheel in "
                            + MooncakeLab.VENV
                            + "): "
                            + cause.getMessage(),
                    cause);
        }
    }

    private final MooncakeLab lab;
    private final String jvmOptionsBefore;
    private boolean closed;

    private MooncakeServices(MooncakeLab lab, String jvmOptionsBefore) {
        this.lab = lab;
        this.jvmOptionsBefore = jvmOptionsBefore;
    }

    /** Starts the master and puts every service started from now on on it. */
    public static MooncakeServices start() throws StartException, InterruptedException {
        MooncakeLab lab;
        try {
            lab = MooncakeLab.start(ServiceProcess.home().resolve("python").resolve("src"));
        } catch (IOException e) {
            throw new StartException(e);
        }
        String before = System.getProperty(ServiceProcess.JVM_OPTIONS_PROPERTY, "");
        System.setProperty(
                ServiceProcess.JVM_OPTIONS_PROPERTY,
                (before + " " + String.join(" ", lab.serviceJvmOptions())).strip());
        return new MooncakeServices(lab, before);
    }

    /** The master, for data planes of this JVM that read what the services stored. */
    public MooncakeLab lab() {
        return lab;
    }

    /**
     * Puts the services' JVM options back and removes the master; idempotent. A namespace that
     * could not be removed is said on stderr, not thrown: the run's result stands.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        System.setProperty(ServiceProcess.JVM_OPTIONS_PROPERTY, jvmOptionsBefore);
        try {
            lab.close();
        } catch (IOException e) {
            System.err.println(
                    "  could not remove the Mooncake master's namespace: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
