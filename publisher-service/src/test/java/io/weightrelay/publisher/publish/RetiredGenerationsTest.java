package io.weightrelay.publisher.publish;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.StoredObject;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.CommonProblems;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * How often a publisher whose segment is full asks control-api to collect: every rank of the node
 * retries its reservation every 200 ms while it waits, and control-api hears at most one call a
 * second per model. A caller that found no room before a collection finished shares its answer; one
 * that found no room again after it waits out the second and has control-api collect again.
 */
class RetiredGenerationsTest {

    private static final long MS = 1_000_000L;

    /** How long control-api takes to answer a collection. */
    private static final long CALL = 300 * MS;

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Deque<Object> answers = new ArrayDeque<>();
    private final List<String> calls = new ArrayList<>();
    private final List<Long> slept = new ArrayList<>();

    private final RetiredGenerations retired =
            new RetiredGenerations(
                    control(),
                    now::get,
                    nanos -> {
                        slept.add(nanos);
                        now.addAndGet(nanos);
                    });

    @Test
    void asksAtMostOnceASecondPerModelAndSharesOnlyACollectionThatCameAfterTheNoRoom() {
        long t0 = now.get();
        answers.add(2);
        assertThat(retired.collect("m")).as("two generations collected").isTrue();
        // Another rank found no room while that collection ran: it shares the answer.
        assertThat(retired.collect("m", t0 + 100 * MS)).isTrue();
        assertThat(calls).containsExactly("m");
        // Another model is asked for on its own.
        answers.add(0);
        assertThat(retired.collect("other")).as("nothing to collect").isFalse();
        assertThat(calls).containsExactly("m", "other");
        assertThat(slept).isEmpty();

        // A loop retired more generations since: no room again, after the collection finished.
        // It waits out the rest of the second since the last call and asks again.
        answers.add(1);
        assertThat(retired.collect("m")).isTrue();
        assertThat(calls).containsExactly("m", "other", "m");
        assertThat(slept).containsExactly(1000 * MS - (CALL + CALL));
        // Nothing collectable (a loader still holds the retired generation): no room came back.
        answers.add(0);
        assertThat(retired.collect("m")).isFalse();
        assertThat(calls).containsExactly("m", "other", "m", "m");
        assertThat(slept).hasSize(2).last().isEqualTo(1000 * MS - CALL);
    }

    @Test
    void aControlApiThatFailsLeavesTheReservationRefusedAndIsAskedAgainLater() {
        answers.add(CommonProblems.INTERNAL.exception("control-api is down"));
        assertThat(retired.collect("m")).isFalse();
        now.addAndGet(1_000_000_000L);
        answers.add(1);
        assertThat(retired.collect("m")).isTrue();
        assertThat(calls).containsExactly("m", "m");
    }

    /** control-api's collection, answering from {@link #answers}; nothing else is called. */
    private ControlPlane control() {
        return new ControlPlane() {
            @Override
            public int collectGarbage(String model) {
                calls.add(model);
                now.addAndGet(CALL);
                Object answer = answers.poll();
                if (answer instanceof RuntimeException e) {
                    throw e;
                }
                return (Integer) answer;
            }

            @Override
            public GenerationLayout layout(GenerationId generation) {
                throw new AssertionError("not called");
            }

            @Override
            public void register(
                    GenerationId generation, String publisher, List<StoredObject> objects) {
                throw new AssertionError("not called");
            }

            @Override
            public boolean knowsGeneration(GenerationId generation) {
                throw new AssertionError("not called");
            }

            @Override
            public SegmentAnswer registerSegment(SegmentOffer offer) {
                throw new AssertionError("not called");
            }

            @Override
            public java.util.Optional<SegmentAnswer> heartbeatSegment(String segment) {
                throw new AssertionError("not called");
            }

            @Override
            public void loseGeneration(
                    GenerationId generation, String segment, long objects, String reason) {
                throw new AssertionError("not called");
            }
        };
    }
}
