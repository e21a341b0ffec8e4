package io.weightrelay.lab;

import io.weightrelay.lab.cli.Invocation;
import io.weightrelay.lab.cli.Progress;
import io.weightrelay.lab.cli.RedisNeed;
import io.weightrelay.lab.cli.RelayCli;
import io.weightrelay.lab.cluster.LabRedis;
import io.weightrelay.lab.cluster.RunRedis;
import java.io.PrintStream;

/**
 * The {@code ./relay} launcher. {@link RelayCli} parses the command line (help, refusal of unknown
 * flags and bad values) into the command's typed {@link Invocation}. Before it runs, the launcher
 * provides the Redis the command needs ({@link RedisNeed}): the lab's Redis when it answers, else a
 * redis-server of the run's own, stopped when the run ends; without redis-server it refuses with
 * exit code {@value #CANNOT_RUN_HERE} at once, naming what to install.
 */
public final class Relay {

    /** Exit code of a command that cannot run on this machine (no root, no redis-server, ...). */
    public static final int CANNOT_RUN_HERE = 3;

    /** A command that cannot run here: its message for stderr, exit {@link #CANNOT_RUN_HERE}. */
    static final class CannotRunHere extends Exception {
        CannotRunHere(String message) {
            super(message);
        }
    }

    private Relay() {}

    public static void main(String[] args) throws Exception {
        // Publishes and updates show their progress on stderr: a bar on a terminal, else lines.
        Progress.show(System.err, System.console() != null);
        int code;
        try {
            code =
                    RelayCli.execute(
                            args,
                            System.out,
                            System.err,
                            (command, invocation, redis) ->
                                    run(command, invocation, redis, System.err));
        } catch (CannotRunHere ex) {
            System.err.println(ex.getMessage());
            code = CANNOT_RUN_HERE;
        }
        if (code != 0) {
            System.exit(code);
        }
    }

    /**
     * Runs {@code invocation} once {@code redis} is provided; the Redis the run started for itself
     * is stopped when the command returns or throws (and by its watcher when the JVM ends inside
     * it: {@code System.exit}, Ctrl-C).
     */
    static void run(String command, Invocation<?> invocation, RedisNeed redis, PrintStream err)
            throws Exception {
        switch (redis.kind()) {
            case NONE -> invocation.run();
            case SERVER -> {
                serverOrRefuse(command);
                invocation.run();
            }
            case ANSWERING -> {
                RunRedis.Address wanted = wanted(command, redis);
                RunRedis chosen;
                try {
                    chosen = RunRedis.choose(wanted, err);
                } catch (LabRedis.ServerMissing e) {
                    throw new CannotRunHere(
                            command
                                    + ": cannot run here: no Redis answers at "
                                    + wanted.hostPort()
                                    + " ("
                                    + wanted.source()
                                    + ") and there is none to start: "
                                    + e.getMessage());
                }
                String before = System.getProperty(RunRedis.PROPERTY);
                try (chosen) {
                    System.setProperty(RunRedis.PROPERTY, chosen.address().hostPort());
                    invocation.run();
                } finally {
                    if (before == null) {
                        System.clearProperty(RunRedis.PROPERTY);
                    } else {
                        System.setProperty(RunRedis.PROPERTY, before);
                    }
                }
            }
        }
    }

    /** The Redis the command asks for: its flags over the lab's configured one. */
    private static RunRedis.Address wanted(String command, RedisNeed redis) throws CannotRunHere {
        RunRedis.Address configured;
        try {
            configured = RunRedis.configured();
        } catch (IllegalArgumentException e) {
            throw new CannotRunHere(command + ": cannot run here: " + e.getMessage());
        }
        if (redis.host() == null && redis.port() == null) {
            return configured;
        }
        return new RunRedis.Address(
                redis.host() != null ? redis.host() : configured.host(),
                redis.port() != null ? redis.port() : configured.port(),
                "--redis-host/--redis-port");
    }

    private static void serverOrRefuse(String command) throws CannotRunHere {
        try {
            LabRedis.serverBinary();
        } catch (LabRedis.ServerMissing e) {
            throw new CannotRunHere(
                    command
                            + ": cannot run here: it starts Redis servers of its own; "
                            + e.getMessage());
        }
    }
}
