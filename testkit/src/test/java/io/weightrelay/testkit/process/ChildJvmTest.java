package io.weightrelay.testkit.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The line channel to a test's child JVM: ready line, replies, refusals, and what a failure quotes
 * of the child's stderr.
 */
class ChildJvmTest {

    /** Says it is ready, logs a line, then answers {@code echo x} with {@code OK x}, else ERR. */
    public static final class Echo {
        public static void main(String[] args) throws IOException {
            System.out.println("some logging before it is up");
            System.out.println("READY " + String.join(" ", args));
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.equals("exit")) {
                    return;
                }
                System.out.println("logging in between");
                if (line.startsWith("echo ")) {
                    System.out.println("OK " + line.substring(5));
                } else if (line.equals("die")) {
                    System.err.println("echo: told to die");
                    System.exit(3);
                } else {
                    System.out.println("ERR unknown command " + line);
                }
            }
        }
    }

    /** Fails before it is ready, saying why on stderr. */
    public static final class FailsToStart {
        public static void main(String[] args) {
            System.err.println("fails-to-start: no segment for you");
            System.exit(1);
        }
    }

    @Test
    void repliesComeBackPastTheChildsOtherOutputAndARefusalIsNamed() throws Exception {
        Path log;
        try (ChildJvm child = ChildJvm.start("echo child", Echo.class, "7", "seven")) {
            log = child.log();
            assertThat(child.ready()).isEqualTo("7 seven");
            assertThat(child.ok("echo hello there")).isEqualTo("hello there");
            assertThatThrownBy(() -> child.ok("jump"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("echo child answered 'ERR unknown command jump'");
            assertThat(log).exists();
        }
        assertThat(log).doesNotExist();
    }

    @Test
    void aChildThatEndsQuotesItsStderr() throws Exception {
        try (ChildJvm child = ChildJvm.start("echo child", Echo.class)) {
            child.send("die");
            assertThatThrownBy(child::reply)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("echo child exited")
                    .hasMessageContaining("echo: told to die");
        }
    }

    @Test
    void aChildThatDoesNotStartQuotesItsStderr() {
        assertThatThrownBy(() -> ChildJvm.start("failing child", FailsToStart.class))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("failing child did not start")
                .hasMessageContaining("fails-to-start: no segment for you");
    }
}
