package io.weightrelay.lab.cli;

import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The progress of a long step (a publish, an update) in bytes, rate and time left, on stderr so a
 * command's stdout stays JSON for scripts. On a terminal it is one bar redrawn in place; otherwise
 * (a log, a pipe, CI) a plain line every few seconds and one when the step ends. Shown only in a
 * {@code ./relay} process ({@link #show}); elsewhere, in tests for one, {@link #of} hands out a
 * progress that prints nothing.
 */
public final class Progress implements AutoCloseable {

    private static final int BAR = 24;
    private static final long TERMINAL_TICK_MS = 200;
    private static final long PLAIN_TICK_MS = 5_000;

    private static volatile PrintStream sink;
    private static volatile boolean onTerminal;

    private final String label;
    private final PrintStream out;
    private final boolean terminal;
    private final long started = System.nanoTime();
    private final AtomicLong done = new AtomicLong();
    private final AtomicLong total = new AtomicLong();
    private volatile String phase = "";
    // When the first byte moved: the rate leaves out the wait before (a prepare, an open).
    private volatile long movingSince;
    private final ScheduledExecutorService ticker;
    private int drawn;
    private boolean closed;

    private Progress(String label, long total, PrintStream out, boolean terminal) {
        this.label = label;
        this.out = out;
        this.terminal = terminal;
        this.total.set(total);
        if (out == null) {
            ticker = null;
            return;
        }
        ticker =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "relay-progress");
                            t.setDaemon(true);
                            return t;
                        });
        long tick = terminal ? TERMINAL_TICK_MS : PLAIN_TICK_MS;
        ticker.scheduleAtFixedRate(this::draw, tick, tick, TimeUnit.MILLISECONDS);
    }

    /** Shows every progress from now on on {@code to}: a bar if {@code terminal}, else lines. */
    public static void show(PrintStream to, boolean terminal) {
        onTerminal = terminal;
        sink = to;
    }

    /** A step of {@code totalBytes} (0 when not known yet; see {@link #set}). */
    public static Progress of(String label, long totalBytes) {
        return new Progress(label, totalBytes, sink, onTerminal);
    }

    /** {@code bytes} more are done. */
    public void add(long bytes) {
        moving(done.addAndGet(bytes));
    }

    /** {@code bytesDone} of {@code bytesTotal} are done. */
    public void set(long bytesDone, long bytesTotal) {
        done.set(bytesDone);
        total.set(bytesTotal);
        moving(bytesDone);
    }

    private void moving(long bytesDone) {
        if (bytesDone > 0 && movingSince == 0) {
            movingSince = System.nanoTime();
        }
    }

    /** What the step is doing now ({@code preparing}, {@code applying}), shown after the label. */
    public void phase(String now) {
        phase = now;
    }

    /** Draws the last state and ends the line. */
    @Override
    public void close() {
        if (ticker == null) {
            return;
        }
        ticker.shutdownNow();
        synchronized (this) {
            closed = true;
            String last = finished(label, done.get(), seconds());
            if (terminal) {
                out.print("\r" + pad(last));
            }
            out.println(terminal ? "" : last);
            out.flush();
        }
    }

    private synchronized void draw() {
        if (closed) {
            return;
        }
        String now =
                line(
                        phase.isEmpty() ? label : label + " (" + phase + ")",
                        done.get(),
                        total.get(),
                        movingSince == 0 ? 0 : (System.nanoTime() - movingSince) / 1e9,
                        terminal);
        if (terminal) {
            out.print("\r" + pad(now));
        } else {
            out.println(now);
        }
        out.flush();
    }

    private String pad(String text) {
        String padded = text.length() < drawn ? text + " ".repeat(drawn - text.length()) : text;
        drawn = text.length();
        return padded;
    }

    private double seconds() {
        return (System.nanoTime() - started) / 1e9;
    }

    /**
     * One progress line: {@code done} of {@code total} bytes, {@code seconds} after the first byte
     * moved, with the rate and (from 1% on) the time left; {@code bar} draws a bar in front (for a
     * terminal).
     */
    static String line(String label, long done, long total, double seconds, boolean bar) {
        StringBuilder s = new StringBuilder("  ").append(label).append(' ');
        double fraction = total > 0 ? Math.min(1.0, (double) done / total) : 0;
        if (bar) {
            int filled = (int) Math.round(fraction * BAR);
            s.append('[').append("#".repeat(filled)).append("-".repeat(BAR - filled)).append("] ");
        }
        double rate = seconds > 0 ? done / seconds : 0;
        s.append(
                total > 0
                        ? String.format(
                                Locale.ROOT,
                                "%s of %s (%d%%)",
                                bytes(done),
                                bytes(total),
                                Math.round(fraction * 100))
                        : bytes(done));
        s.append(String.format(Locale.ROOT, ", %s/s", bytes((long) rate)));
        if (total > 0 && rate > 0 && done < total && fraction >= 0.01) {
            s.append(String.format(Locale.ROOT, ", ETA %.1f s", (total - done) / rate));
        }
        return s.toString();
    }

    /** The line a step ends with: how much, how long, how fast. */
    static String finished(String label, long done, double seconds) {
        return String.format(
                Locale.ROOT,
                "  %s %s in %.2f s, %s/s",
                label,
                bytes(done),
                seconds,
                bytes(seconds > 0 ? (long) (done / seconds) : 0));
    }

    static String bytes(long n) {
        if (n >= 1L << 30) {
            return String.format(Locale.ROOT, "%.2f GiB", n / (double) (1L << 30));
        }
        if (n >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", n / (double) (1L << 20));
        }
        if (n >= 1L << 10) {
            return String.format(Locale.ROOT, "%.1f KiB", n / (double) (1L << 10));
        }
        return n + " B";
    }
}
