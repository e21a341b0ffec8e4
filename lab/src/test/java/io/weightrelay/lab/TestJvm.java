package io.weightrelay.lab;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a test's own main class in a child JVM on the test's class path: what a test
 * runs when it needs a process that ends the way a lab process can (Ctrl-C, a kill, an exit that
 * never reaches {@code close()}), or a process inside a host of the multi-host lab.
 */
public final class TestJvm {

    private TestJvm() {}

    /** {@code java -Xmx<heap> -cp <this class path> <main> <args...>}. */
    public static List<String> command(String heap, Class<?> main, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(
                List.of(
                        "-Xmx" + heap,
                        "-cp",
                        System.getProperty("java.class.path"),
                        main.getName()));
        command.addAll(List.of(args));
        return command;
    }
}
