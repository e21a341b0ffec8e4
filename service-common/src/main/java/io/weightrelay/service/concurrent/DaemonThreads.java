package io.weightrelay.service.concurrent;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionHandler;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
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

    /**
     * One daemon thread named {@code name} that works through at most {@code queued} waiting tasks;
     * {@code whenFull} decides what happens to a task beyond them.
     */
    public static ThreadPoolExecutor single(
            String name, int queued, RejectedExecutionHandler whenFull) {
        return new ThreadPoolExecutor(
                1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(queued), named(name), whenFull);
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
