package io.weightrelay.lab;

import io.weightrelay.lab.cli.Progress;
import io.weightrelay.lab.cli.RelayCli;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * The {@code ./relay} launcher. {@link RelayCli} parses the command line (help, refusal of unknown
 * flags and bad values); each command then runs as the {@code main} of the module that owns it, so
 * a benchmark lives beside the code it measures and the lab only routes to it.
 */
public final class Relay {

    private Relay() {}

    public static void main(String[] args) throws Throwable {
        // Publishes and updates show their progress on stderr: a bar on a terminal, else lines.
        Progress.show(System.err, System.console() != null);
        int code;
        try {
            code = RelayCli.execute(args, System.out, System.err, Relay::run);
        } catch (InvocationTargetException ex) {
            throw ex.getCause();
        }
        if (code != 0) {
            System.exit(code);
        }
    }

    private static void run(String command, String entryPoint, String[] args) throws Exception {
        Method main;
        try {
            main = Class.forName(entryPoint).getMethod("main", String[].class);
        } catch (ClassNotFoundException ex) {
            System.err.println(
                    "relay: '"
                            + command
                            + "' is not part of this build yet ("
                            + entryPoint
                            + " is missing)");
            System.exit(3);
            return;
        }
        main.invoke(null, (Object) args);
    }
}
