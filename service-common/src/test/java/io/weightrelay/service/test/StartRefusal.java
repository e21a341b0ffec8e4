package io.weightrelay.service.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.builder.SpringApplicationBuilder;

/** Starts a service's real application context with some arguments and expects it to refuse. */
public final class StartRefusal {

    private StartRefusal() {}

    /**
     * Runs {@code application} (on a free loopback port) with {@code args} ({@code --key=value})
     * and asserts that the start fails with an exception of {@code type} somewhere in the cause
     * chain whose message contains {@code message}.
     *
     * @return that exception's message
     */
    public static String assertRefusesToStart(
            Class<?> application, Class<? extends Throwable> type, String message, String... args) {
        List<String> all =
                new ArrayList<>(List.of("--server.port=0", "--server.address=127.0.0.1"));
        all.addAll(List.of(args));
        Throwable[] failure = new Throwable[1];
        assertThatThrownBy(
                        () -> {
                            try {
                                new SpringApplicationBuilder(application)
                                        .run(all.toArray(String[]::new))
                                        .close();
                            } catch (Throwable t) {
                                failure[0] = t;
                                throw t;
                            }
                        })
                .as("%s must refuse to start with %s", application.getSimpleName(), all)
                .isNotNull();
        Throwable cause = failure[0];
        while (cause != null && !type.isInstance(cause)) {
            cause = cause.getCause();
        }
        assertThat(cause)
                .as("a %s in the cause chain of %s", type.getSimpleName(), failure[0])
                .isNotNull();
        assertThat(cause.getMessage()).contains(message);
        return cause.getMessage();
    }
}
