package io.weightrelay.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.placement.FragmentTemplate;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.web.client.HttpClientErrorException;

/**
 * The loader's side of the placement-template protocol, as loader-service and the lab's control
 * plane bench both run it: only the templates control-api lists as missing go up, then the
 * registration is sent once more; any other refusal is the caller's.
 */
class PlacementTemplatesTest {

    private static final FragmentTemplate A = template("a");
    private static final FragmentTemplate B = template("b");

    private static FragmentTemplate template(String tensor) {
        return FragmentTemplate.of(
                List.of(
                        new FragmentTemplate.Entry(
                                tensor,
                                new long[] {0},
                                new long[] {4},
                                "weights",
                                0,
                                new long[] {2})));
    }

    private static HttpClientErrorException refused(HttpStatus status, String body) {
        return HttpClientErrorException.create(
                status,
                status.getReasonPhrase(),
                new HttpHeaders(),
                body.getBytes(StandardCharsets.UTF_8),
                StandardCharsets.UTF_8);
    }

    private static String notFound(String missing) {
        return "{\"type\":\"https://weightrelay.io/problems/placement-template-not-found\""
                + (missing == null ? "" : ",\"missing\":" + missing)
                + "}";
    }

    @Test
    void uploadsWhatIsMissingThenRegistersAgain() {
        AtomicInteger sent = new AtomicInteger();
        List<String> uploaded = new ArrayList<>();
        String missing = "[\"" + B.digest() + "\"]";
        long epoch =
                PlacementTemplates.register(
                        () -> {
                            if (sent.getAndIncrement() == 0) {
                                throw refused(HttpStatus.CONFLICT, notFound(missing));
                            }
                            return 7L;
                        },
                        List.of(A, B),
                        t -> uploaded.add(t.digest()));
        assertThat(epoch).isEqualTo(7L);
        assertThat(sent).hasValue(2);
        assertThat(uploaded).containsExactly(B.digest());
    }

    @Test
    void withoutAListEveryTemplateGoesUp() {
        AtomicInteger sent = new AtomicInteger();
        List<String> uploaded = new ArrayList<>();
        PlacementTemplates.register(
                () -> {
                    if (sent.getAndIncrement() == 0) {
                        throw refused(HttpStatus.CONFLICT, notFound(null));
                    }
                    return 1L;
                },
                List.of(A, B),
                t -> uploaded.add(t.digest()));
        assertThat(uploaded).containsExactly(A.digest(), B.digest());
        assertThat(PlacementTemplates.missing(null)).isNull();
    }

    @Test
    void anyOtherRefusalIsThrownAsItCame() {
        HttpClientErrorException other = refused(HttpStatus.CONFLICT, "{\"type\":\"x\"}");
        List<String> uploaded = new ArrayList<>();
        assertThatThrownBy(
                        () ->
                                PlacementTemplates.register(
                                        () -> {
                                            throw other;
                                        },
                                        List.of(A),
                                        t -> uploaded.add(t.digest())))
                .isSameAs(other);
        assertThat(uploaded).isEmpty();
    }
}
