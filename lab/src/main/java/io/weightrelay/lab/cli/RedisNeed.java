package io.weightrelay.lab.cli;

/**
 * What Redis a command needs before it runs; the launcher provides it or refuses with exit code 3
 * within seconds, before anything starts.
 *
 * @param kind what the command needs
 * @param host {@code --redis-host} as given, or null: then the lab's configured Redis
 * @param port {@code --redis-port} as given, or null: as {@code host}
 */
public record RedisNeed(Kind kind, String host, Integer port) {

    /** What a command needs of Redis. */
    public enum Kind {
        /** Nothing: it starts no service, or talks to services already running. */
        NONE,
        /** redis-server to run: it starts Redis servers of its own (the fault suite, --hosts). */
        SERVER,
        /**
         * A Redis that answers: the configured one when it does, else one the launcher starts for
         * the run (so redis-server, then).
         */
        ANSWERING
    }

    static final RedisNeed NONE = new RedisNeed(Kind.NONE, null, null);

    static final RedisNeed SERVER = new RedisNeed(Kind.SERVER, null, null);

    /** The configured Redis or one of the run's own; {@code host}, {@code port} as given. */
    static RedisNeed answering(String host, Integer port) {
        return new RedisNeed(Kind.ANSWERING, host, port);
    }
}
