package io.weightrelay.service.concurrent;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Thread factories for the services' background executors: daemon threads, so that a stuck beat or
 * copy never holds up the JVM's exit, named so that a thread dump says whose they are.
 */
public final class DaemonThreads {
    private DaemonThreads() {}

    /** Every thread named {@code name}. */
    public static ThreadFactory named(String name) {
        return r -> daemon(r, name);
    }

    /** Threads named {@code prefix1}, {@code prefix2}, ... */
    public static ThreadFactory numbered(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> daemon(r, prefix + n.incrementAndGet());
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
