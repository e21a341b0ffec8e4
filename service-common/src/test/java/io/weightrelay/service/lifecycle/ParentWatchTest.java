package io.weightrelay.service.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A watched process's end runs the action once; a process already gone runs it at once. */
class ParentWatchTest {

    /**
     * As a service watches the lab that started it: a process that is not the watcher's child (a
     * {@code sleep} whose shell has exited), ended by a signal.
     */
    @Test
    void theActionRunsOnceTheWatchedProcessEnds() throws Exception {
        ProcessHandle parent = orphanedSleep();
        AtomicInteger runs = new AtomicInteger();
        try {
            ParentWatch watch = new ParentWatch(parent.pid(), runs::incrementAndGet);
            Thread.sleep(300);
            assertThat(watch.ended()).isNotDone();
            assertThat(runs).hasValue(0);

            parent.destroyForcibly();
            watch.ended().get(10, TimeUnit.SECONDS);
            assertThat(runs).hasValue(1);

            ProcessHandle another = orphanedSleep();
            ParentWatch closed = new ParentWatch(another.pid(), runs::incrementAndGet);
            closed.close();
            another.destroyForcibly();
            closed.ended().get(10, TimeUnit.SECONDS);
            assertThat(runs).as("a closed watch does not act").hasValue(1);
        } finally {
            parent.destroyForcibly();
        }
    }

    @Test
    void aProcessAlreadyGoneRunsTheActionAtOnce() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor(10, TimeUnit.SECONDS);
        AtomicInteger runs = new AtomicInteger();

        new ParentWatch(gone.pid(), runs::incrementAndGet).ended().get(5, TimeUnit.SECONDS);

        assertThat(runs).hasValue(1);
    }

    /** Every service watches its parent only when told its pid, and never itself. */
    @Test
    void servicesWatchTheirParentOnlyWhenToldItsPid() throws Exception {
        ApplicationContextRunner runner =
                new ApplicationContextRunner()
                        .withConfiguration(
                                AutoConfigurations.of(ParentWatchAutoConfiguration.class));
        runner.run(context -> assertThat(context).doesNotHaveBean(ParentWatch.class));
        ProcessHandle parent = orphanedSleep();
        try {
            runner.withPropertyValues("relay.parent-pid=" + parent.pid())
                    .run(
                            context -> {
                                assertThat(context).hasSingleBean(ParentWatch.class);
                                ParentWatch watch = context.getBean(ParentWatch.class);
                                assertThat(watch.pid()).isEqualTo(parent.pid());
                                assertThat(watch.ended()).isNotDone();
                            });
            // The context closed: the parent's end no longer stops anything (here, this JVM).
        } finally {
            parent.destroyForcibly();
        }
        runner.withPropertyValues("relay.parent-pid=" + ProcessHandle.current().pid())
                .run(
                        context ->
                                assertThat(context)
                                        .getFailure()
                                        .rootCause()
                                        .hasMessageContaining("is this process itself"));
    }

    /** A {@code sleep} that is not this JVM's child: its shell has exited. */
    private static ProcessHandle orphanedSleep() throws Exception {
        Process shell =
                new ProcessBuilder("bash", "-c", "sleep 60 >/dev/null 2>&1 & echo $!").start();
        long pid = Long.parseLong(new String(shell.getInputStream().readAllBytes()).strip());
        shell.waitFor(10, TimeUnit.SECONDS);
        return ProcessHandle.of(pid).orElseThrow();
    }
}
