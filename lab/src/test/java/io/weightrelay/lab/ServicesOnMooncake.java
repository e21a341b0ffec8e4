package io.weightrelay.lab;

import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;

/**
 * A test class's {@code mooncake_master} of the pinned wheel, with every service the class starts
 * pointed at it (its JVM options added to {@link ServiceProcess#JVM_OPTIONS_PROPERTY}); {@link
 * #close()} stops the master and gives the property back its value from before.
 */
final class ServicesOnMooncake implements AutoCloseable {

    private final MooncakeLab mooncake;
    private final String previousOptions;

    private ServicesOnMooncake(MooncakeLab mooncake, String previousOptions) {
        this.mooncake = mooncake;
        this.previousOptions = previousOptions;
    }

    static ServicesOnMooncake start() throws Exception {
        MooncakeLab mooncake = MooncakeLab.start(Path.of("../python/src"));
        String previous = System.getProperty(ServiceProcess.JVM_OPTIONS_PROPERTY, "");
        System.setProperty(
                ServiceProcess.JVM_OPTIONS_PROPERTY,
                (previous + " " + String.join(" ", mooncake.serviceJvmOptions())).strip());
        return new ServicesOnMooncake(mooncake, previous);
    }

    MooncakeLab lab() {
        return mooncake;
    }

    @Override
    public void close() throws Exception {
        System.setProperty(ServiceProcess.JVM_OPTIONS_PROPERTY, previousOptions);
        mooncake.close();
    }
}
