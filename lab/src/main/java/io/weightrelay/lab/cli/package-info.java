/**
 * The {@code ./relay} command line on picocli: one command class per verb ({@code demo}, {@code
 * faults}, {@code trainer}, {@code rollout}, {@code bench <kind>}), {@code --help} on each, unknown
 * flags and bad values refused (exit 2) with the valid choices named, and the progress shown while
 * a lab publishes or updates. A command that parses cleanly is handed to the {@code main} of the
 * module that owns it, with the flags it was given and nothing else, so every default stays where
 * it was.
 */
package io.weightrelay.lab.cli;
