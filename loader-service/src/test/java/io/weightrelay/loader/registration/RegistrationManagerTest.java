package io.weightrelay.loader.registration;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RegistrationManagerTest {

    /** Records every call; handles are the base names with a sequence number. */
    static final class RecordingRegistrar implements Registrar<String> {
        final List<String> registered = new ArrayList<>();
        final List<String> unregistered = new ArrayList<>();

        @Override
        public String register(RegistrationKey key) {
            String handle = key.base() + "#" + registered.size();
            registered.add(handle);
            return handle;
        }

        @Override
        public void unregister(RegistrationKey key, String handle) {
            unregistered.add(handle);
        }
    }

    /** Renews what it is asked to, except the bases it refuses (as a data plane that cannot). */
    static final class RenewingRegistrar implements Registrar<String> {
        final RecordingRegistrar recorded = new RecordingRegistrar();
        final List<String> renewed = new ArrayList<>();
        final List<String> refused = new ArrayList<>();

        @Override
        public String register(RegistrationKey key) {
            return recorded.register(key);
        }

        @Override
        public void unregister(RegistrationKey key, String handle) {
            recorded.unregister(key, handle);
        }

        @Override
        public boolean renew(RegistrationKey from, RegistrationKey to, String handle) {
            if (refused.contains(from.base())) {
                return false;
            }
            renewed.add(handle);
            return true;
        }
    }

    private final RecordingRegistrar registrar = new RecordingRegistrar();
    private final RegistrationManager<String> manager = new RegistrationManager<>(registrar);

    private static RegistrationKey key(long epoch, String instance, String base, long size) {
        return new RegistrationKey(epoch, instance, "w0", base, size);
    }

    @Test
    void newKeysAreProvisionalAndReusedAcrossGenerationsOncePromoted() {
        String first = manager.acquire(key(1, "i0", "seg-a", 100));
        assertThat(manager.snapshot())
                .extracting(RegistrationManager.Snapshot::state)
                .containsExactly(RegistrationState.PROVISIONAL);
        assertThat(manager.promote()).isEqualTo(1);

        String again = manager.acquire(key(1, "i0", "seg-a", 100));
        assertThat(again).isSameAs(first);
        assertThat(registrar.registered).hasSize(1);
        assertThat(manager.stats().reused()).isEqualTo(1);
        assertThat(manager.snapshot())
                .extracting(RegistrationManager.Snapshot::state)
                .containsExactly(RegistrationState.PERSISTENT);
    }

    /**
     * A restarted engine's registration keeps (renews) the buffers it declares again with the same
     * size; one declared with another size, one not declared, and one the registrar cannot renew
     * are unregistered and, when declared, registered anew.
     */
    @Test
    void aRegistrationAgainRenewsTheBuffersDeclaredAsBefore() {
        RenewingRegistrar renewing = new RenewingRegistrar();
        renewing.refused.add("seg-refused");
        RegistrationManager<String> restarted = new RegistrationManager<>(renewing);
        String same = restarted.acquirePersistent(key(1, "i0", "seg-a", 100));
        restarted.acquirePersistent(key(1, "i0", "seg-b", 100));
        restarted.acquirePersistent(key(1, "i0", "seg-gone", 100));
        restarted.acquirePersistent(key(1, "i0", "seg-refused", 100));
        String other = restarted.acquirePersistent(key(1, "i1", "seg-a2", 100));

        List<RegistrationKey> declared =
                List.of(
                        key(2, "i0", "seg-a", 100),
                        key(2, "i0", "seg-b", 200),
                        key(2, "i0", "seg-refused", 100),
                        key(2, "i1", "seg-a2", 100));
        assertThat(restarted.renew("i0", 2, declared)).isEqualTo(1);
        assertThat(renewing.renewed).containsExactly(same);
        assertThat(restarted.invalidateExcept("i0", 2)).isEqualTo(3);
        assertThat(renewing.recorded.unregistered)
                .containsExactly("seg-b#1", "seg-gone#2", "seg-refused#3");

        assertThat(restarted.acquirePersistent(key(2, "i0", "seg-a", 100))).isSameAs(same);
        assertThat(restarted.acquirePersistent(key(2, "i0", "seg-b", 200))).isEqualTo("seg-b#5");
        assertThat(restarted.find(key(1, "i1", "seg-a2", 100)))
                .as("another instance's registrations are not touched")
                .isSameAs(other);
        assertThat(restarted.snapshot())
                .filteredOn(s -> s.key().instance().equals("i0"))
                .extracting(s -> s.key().epoch())
                .containsOnly(2L);
    }

    @Test
    void buffersCreatedAtRegistrationAreReusedByTheFirstPrepareAndSurviveItsFailure() {
        String created = manager.acquirePersistent(key(1, "i0", "seg-a", 100));

        String prepared = manager.acquire(key(1, "i0", "seg-a", 100));
        manager.acquire(key(1, "i0", "staging", 50));
        assertThat(prepared).isSameAs(created);
        assertThat(manager.discardProvisional()).isEqualTo(1);

        assertThat(registrar.registered).containsExactly("seg-a#0", "staging#1");
        assertThat(registrar.unregistered).containsExactly("staging#1");
        assertThat(manager.snapshot())
                .extracting(RegistrationManager.Snapshot::state)
                .containsExactly(RegistrationState.PERSISTENT);
    }

    /**
     * The read staging is created at registration at its upper bound: a plan that needs less reuses
     * it (persistent, so a failed prepare keeps it), one that needs more replaces it.
     */
    @Test
    void stagingSizedAheadIsReusedWhileLargeEnoughAndGrownWhenAPlanNeedsMore() {
        String ahead = manager.acquirePersistent(key(1, "i0", "staging", 300));

        assertThat(manager.acquireAtLeast(key(1, "i0", "staging", 100))).isSameAs(ahead);
        assertThat(manager.acquireAtLeast(key(1, "i0", "staging", 300))).isSameAs(ahead);
        assertThat(manager.discardProvisional()).isZero();
        assertThat(registrar.registered).containsExactly("staging#0");

        String grown = manager.acquireAtLeast(key(1, "i0", "staging", 400));
        assertThat(grown).isEqualTo("staging#1");
        assertThat(registrar.unregistered).containsExactly("staging#0");
        assertThat(manager.acquireAtLeast(key(2, "i0", "staging", 100)))
                .as("another epoch's staging is never reused")
                .isEqualTo("staging#2");
    }

    @Test
    void aFailedPrepareDropsOnlyItsProvisionalRegistrations() {
        manager.acquire(key(1, "i0", "seg-a", 100));
        manager.promote();
        manager.acquire(key(1, "i0", "seg-b", 100));

        assertThat(manager.discardProvisional()).isEqualTo(1);
        assertThat(registrar.unregistered).containsExactly("seg-b#1");
        assertThat(manager.snapshot()).extracting(s -> s.key().base()).containsExactly("seg-a");
    }

    @Test
    void anAllocationChangeReplacesTheRegistrationOfTheSameBase() {
        manager.acquire(key(1, "i0", "seg-a", 100));
        manager.promote();
        manager.acquire(key(1, "i0", "seg-a", 200));

        assertThat(registrar.unregistered).containsExactly("seg-a#0");
        assertThat(manager.snapshot()).extracting(s -> s.key().size()).containsExactly(200L);
    }

    @Test
    void aReconnectInvalidatesOlderEpochsOfThatInstanceOnly() {
        promoteSegAOfI0SegBOfI1AndSegCOfI0(1, 2);

        assertThat(manager.invalidateBefore("i0", 2)).isEqualTo(1);
        assertOnlySegAWasUnregistered();
    }

    /** After Redis lost its data control-api's epoch counter starts again: a lower epoch is new. */
    @Test
    void aRegistrationAtARestartedEpochInvalidatesEveryOtherEpochOfThatInstance() {
        promoteSegAOfI0SegBOfI1AndSegCOfI0(7, 1);

        assertThat(manager.invalidateBefore("i0", 1)).as("what a reconnect did before").isZero();
        assertThat(manager.invalidateExcept("i0", 1)).isEqualTo(1);
        assertOnlySegAWasUnregistered();
    }

    /**
     * seg-a of i0 and seg-b of i1 at {@code epoch}, seg-c of i0 at {@code laterEpoch}, promoted.
     */
    private void promoteSegAOfI0SegBOfI1AndSegCOfI0(long epoch, long laterEpoch) {
        manager.acquire(key(epoch, "i0", "seg-a", 100));
        manager.acquire(key(epoch, "i1", "seg-b", 100));
        manager.acquire(key(laterEpoch, "i0", "seg-c", 100));
        manager.promote();
    }

    private void assertOnlySegAWasUnregistered() {
        assertThat(registrar.unregistered).containsExactly("seg-a#0");
        assertThat(manager.snapshot())
                .extracting(s -> s.key().base())
                .containsExactly("seg-b", "seg-c");
    }

    /**
     * The same engine registered again because control-api forgot it: its memory did not change, so
     * nothing is unregistered and its registrations answer under the new epoch.
     */
    @Test
    void registeringTheSameInstanceAgainCarriesItsRegistrationsOverToTheNewEpoch() {
        String held = manager.acquire(key(7, "i0", "seg-a", 100));
        manager.acquire(key(7, "i1", "seg-b", 100));
        manager.promote();

        assertThat(manager.carryOver("i0", 1)).isEqualTo(1);

        assertThat(registrar.unregistered).isEmpty();
        assertThat(manager.find(key(1, "i0", "seg-a", 100))).isSameAs(held);
        assertThat(manager.find(key(7, "i0", "seg-a", 100))).isNull();
        assertThat(manager.snapshot())
                .filteredOn(s -> s.key().instance().equals("i0"))
                .extracting(RegistrationManager.Snapshot::state)
                .containsExactly(RegistrationState.PERSISTENT);
        assertThat(manager.acquire(key(1, "i0", "seg-a", 100)))
                .as("the next update reuses it")
                .isSameAs(held);
        assertThat(registrar.registered).hasSize(2);
    }

    /**
     * A restarted engine registers again with new receive buffers: only the loader's read staging
     * moves to the new epoch (and the registration at that epoch reuses it); the old buffers go.
     */
    @Test
    void aRestartedEngineKeepsOnlyTheLoadersReadStaging() {
        RegistrationKey staging = new RegistrationKey(3, "i0", "staging", "staging-i0", 64);
        String kept = manager.acquirePersistent(staging);
        String oldBuffers = manager.acquirePersistent(key(3, "i0", "seg-a", 100));
        String otherInstance =
                manager.acquirePersistent(
                        new RegistrationKey(3, "i1", "staging", "staging-i1", 64));

        assertThat(manager.carryOverDevice("i0", "staging", 4)).isEqualTo(1);
        assertThat(manager.invalidateExcept("i0", 4)).isEqualTo(1);

        assertThat(registrar.unregistered).containsExactly(oldBuffers);
        RegistrationKey again = new RegistrationKey(4, "i0", "staging", "staging-i0", 64);
        assertThat(manager.acquirePersistent(again)).as("not made again").isSameAs(kept);
        assertThat(manager.acquirePersistent(key(4, "i0", "seg-a", 100)))
                .as("new receive buffers")
                .isNotEqualTo(oldBuffers);
        assertThat(manager.find(new RegistrationKey(3, "i1", "staging", "staging-i1", 64)))
                .isSameAs(otherInstance);
        assertThat(registrar.registered).hasSize(4);
    }

    @Test
    void teardownUnregistersExactlyTheBasesOfTheInstance() {
        manager.acquire(key(1, "i0", "seg-a", 100));
        manager.acquire(new RegistrationKey(1, "i0", "staging", "staging-i0", 64));
        manager.acquire(key(1, "i1", "seg-b", 100));

        List<RegistrationKey> gone = manager.unregisterInstance("i0");

        assertThat(gone).extracting(RegistrationKey::base).containsExactly("seg-a", "staging-i0");
        assertThat(registrar.unregistered).containsExactly("seg-a#0", "staging-i0#1");
        assertThat(manager.stats().live()).isEqualTo(1);
    }
}
