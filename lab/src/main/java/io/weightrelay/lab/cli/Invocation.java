package io.weightrelay.lab.cli;

/**
 * A {@code ./relay} command that parsed cleanly, ready to run: the options its flags made, typed as
 * the code that runs them takes them, and that code. The launcher provides Redis first and then
 * calls {@link #run()}; a test looks at {@link #runs()} and {@link #options()} instead.
 *
 * @param runs the class whose entry point {@code body} is (which bench of a command runs)
 * @param options what the command's flags say, defaults applied
 * @param body the bench's, demo's or tool's typed entry point
 */
public record Invocation<O>(Class<?> runs, O options, Body<O> body) {

    /** A typed entry point: {@code UpdateBench::run}, {@code Demo::run}, ... */
    @FunctionalInterface
    public interface Body<O> {
        void run(O options) throws Exception;
    }

    /** Runs the command. */
    public void run() throws Exception {
        body.run(options);
    }
}
