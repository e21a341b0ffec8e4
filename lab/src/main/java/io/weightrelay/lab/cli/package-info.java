/**
 * The {@code ./relay} command line on picocli: one command class per verb ({@code demo}, {@code
 * faults}, {@code trainer}, {@code rollout}, {@code bench <kind>}), {@code --help} on each, unknown
 * flags and bad values refused (exit 2) with the valid choices named, and the progress shown while
 * a lab publishes or updates. Each flag's default is written once, on its option; a command that
 * parses cleanly turns its flags into the typed options of the code that runs it (a bench's or the
 * demo's {@code run(Options)}) and hands that {@link io.weightrelay.lab.cli.Invocation} to the
 * launcher, which provides Redis and runs it: no class names, no second parse.
 */
package io.weightrelay.lab.cli;
