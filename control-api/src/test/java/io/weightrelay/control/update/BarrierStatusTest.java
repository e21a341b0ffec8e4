package io.weightrelay.control.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.control.model.BarrierName;
import io.weightrelay.api.control.model.BarrierStatus;
import io.weightrelay.api.control.model.ParticipantState;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdateSession;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How a barrier's status is read off a session, without Redis ({@link Barriers#status}). */
class BarrierStatusTest {

    private static ParticipantState at(String instance, UpdatePhase phase, boolean sent) {
        ParticipantState p = new ParticipantState(instance, phase);
        if (sent) {
            p.setSent(true);
        }
        return p;
    }

    private static UpdateSession session(SessionState state, ParticipantState... participants) {
        return new UpdateSession("m", 3L, "g", state, List.of(participants));
    }

    @Test
    void theSentBarrierOpensWhileApplyingOnceEveryParticipantSent() {
        UpdateSession oneSent =
                session(
                        SessionState.APPLYING,
                        at("i0", UpdatePhase.SENT, true),
                        at("i1", UpdatePhase.APPLYING, false));
        BarrierStatus shut = Barriers.status(oneSent, BarrierName.SENT);
        assertThat(shut.getOpen()).isFalse();
        assertThat(shut.getArrived()).isEqualTo(1);
        assertThat(shut.getWaiting()).containsExactly("i1");

        UpdateSession allSent =
                session(
                        SessionState.APPLYING,
                        at("i0", UpdatePhase.APPLIED, true),
                        at("i1", UpdatePhase.SENT, true));
        assertThat(Barriers.status(allSent, BarrierName.SENT).getOpen()).isTrue();
        // the applied barrier waits for the session, not for the count
        BarrierStatus applied = Barriers.status(allSent, BarrierName.APPLIED);
        assertThat(applied.getOpen()).isFalse();
        assertThat(applied.getWaiting()).containsExactly("i1");
    }

    @Test
    void aFailedSessionFailsEveryBarrierAndNamesItsFailure() {
        UpdateSession failed =
                session(SessionState.PAUSED_REBUILD, at("i0", UpdatePhase.PAUSED_REBUILD, false));
        failed.setFailedInstance("i0");
        failed.setFailure("store read timed out");
        for (BarrierName barrier : BarrierName.values()) {
            BarrierStatus s = Barriers.status(failed, barrier);
            assertThat(s.getOpen()).as(barrier.getValue()).isFalse();
            assertThat(s.getFailed()).as(barrier.getValue()).isTrue();
            assertThat(s.getFailedInstance()).isEqualTo("i0");
            assertThat(s.getFailure()).isEqualTo("store read timed out");
        }
    }

    @Test
    void aStatusNamesAtMostSixteenOfThoseNotArrived() {
        List<ParticipantState> participants = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            participants.add(at(String.format("i%02d", i), UpdatePhase.PREPARED, false));
        }
        UpdateSession preparing =
                new UpdateSession("m", 3L, "g", SessionState.APPLYING, participants);
        BarrierStatus s = Barriers.status(preparing, BarrierName.APPLIED);
        assertThat(s.getArrived()).isZero();
        assertThat(s.getExpected()).isEqualTo(20);
        assertThat(s.getWaiting()).hasSize(Barriers.WAITING_NAMED).startsWith("i00", "i01");
        assertThat(Barriers.status(preparing, BarrierName.PREPARED).getOpen()).isTrue();
    }
}
