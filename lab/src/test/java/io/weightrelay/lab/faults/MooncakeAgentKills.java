package io.weightrelay.lab.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Issue 47: the Mooncake agent of a service dies under it (SIGKILL of the agent process, found in
 * the service's process tree; the service's JVM lives on). A loader's agent killed mid-apply, in
 * both modes (the loader frozen inside the apply, as the fault suite's loader case does, so the
 * kill lands there by construction): the session fails naming the dead agent, no engine advances,
 * every serving engine holds whole bytes of the generation it served, and once the agent is started
 * again the next update succeeds. A publisher's agent killed after a commit: its mounted segment,
 * and every object in it, went with it; the generations it held are reported LOST naming the agent,
 * never served, every engine stays on the whole bytes it holds, and the next publish (into the
 * restarted agent's new segment) reaches every engine.
 *
 * <p>What {@code MooncakeLabTest} proves on its Mooncake labs, here because it drives the fault
 * suite's package-private tools ({@link MidApply}, {@link Engines}, {@link Ledger}).
 */
public final class MooncakeAgentKills {

    private static final int ATTEMPTS = 5;

    private MooncakeAgentKills() {}

    /**
     * A loader's agent killed mid-apply on {@code lab} (tiny, 4 instances x tp 2): the session
     * fails naming the dead agent, no engine advances, every serving engine holds whole bytes of
     * the generation it served, and once the agent is started again the next update succeeds.
     * {@code steps} gives the trainer steps to publish (each one not yet published on the lab).
     */
    public static void loaderAgentKilledMidApply(LabCluster lab, LongSupplier steps)
            throws Exception {
        long previous = lab.publish(steps.getAsLong());
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(previous)).isPositive();
        String victim = lab.engines().get(0).instance();
        long loader = lab.faults().loaderPid(0);
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            long g = lab.publish(steps.getAsLong());
            Map<String, Long> before = Ledger.generations(lab);
            Engines.Running running =
                    Engines.start(lab.engines(), LoaderKilledMidApplyCase.PHASE_TIMEOUT);
            String caught = MidApply.freezeLoader(lab, g, victim, loader);
            if (caught == null) {
                for (Engines.Ended e : running.await(LabCase.UPDATE_WAIT)) {
                    assertThat(e.updated()).as("an update with no fault: " + e.describe()).isTrue();
                }
                previous = g;
                continue;
            }
            // the loader's JVM is frozen inside the apply; its agent dies under it
            long agent = killAgentOf(loader);
            MidApply.signal("CONT", loader);
            List<Engines.Ended> ended = running.await(LabCase.UPDATE_WAIT);
            String outcomes =
                    String.join("; ", ended.stream().map(Engines.Ended::describe).toList());

            Ledger ledger = new Ledger();
            ledger.noneAdvanced(lab, before);
            long verified = ledger.observe(lab, Set.of());
            assertThat(ledger.problems).as("corrupted or partial bytes served").isEmpty();
            assertThat(ledger.corrupted + ledger.partial).isZero();
            for (Engines.Ended e : ended) {
                assertThat(e.updated()).as("no engine updates: " + outcomes).isFalse();
            }
            for (RolloutEngine engine : lab.engines()) {
                assertThat(engine.status().getGeneration())
                        .as(engine.instance() + " stays on generation " + previous)
                        .isEqualTo(previous);
            }
            UpdateSession session = lab.session(g, "lab");
            assertThat(session.getState())
                    .as("the session of " + g + " fails: " + outcomes)
                    .isIn(SessionState.PAUSED_REBUILD, SessionState.RESUMED_OLD);
            String named = "Mooncake agent pid " + agent;
            assertThat(session.getFailure() + " / " + outcomes)
                    .as("the failure names the dead agent (killed " + caught + ")")
                    .contains(named);
            System.out.printf(
                    "loader %s's agent %d killed %s (attempt %d): session %s (%s); %s; %d bytes"
                            + " served verified%n",
                    victim,
                    agent,
                    caught,
                    attempt,
                    session.getState(),
                    session.getFailure(),
                    outcomes,
                    verified);

            // the agent starts again with the loader's next command; the next update succeeds
            lab.reRegisterAll();
            lab.updateAll().requireUpdated();
            assertThat(lab.verifyAll(g)).as("every byte of " + g).isPositive();
            assertThat(agentOf(loader)).as("a new agent serves the loader").isNotEqualTo(agent);
            return;
        }
        throw new AssertionError(
                "the apply of " + victim + " never lasted long enough to be caught");
    }

    /**
     * A publisher's agent killed after a commit on {@code lab} (tiny, 4 instances x tp 2, compat):
     * the generations it held are reported LOST naming the agent, never served, every engine stays
     * on the whole bytes it holds, and the next publish reaches every engine. {@code steps} as
     * above.
     */
    public static void publisherAgentKilledAfterCommit(LabCluster lab, LongSupplier steps)
            throws Exception {
        long first = lab.publish(steps.getAsLong());
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(first)).isPositive();
        long committed = lab.publish(steps.getAsLong());
        long publisher = lab.faults().publisherPid(0);
        long agent = killAgentOf(publisher);

        // Without replicas, both generations had objects in the dead agent's segment: LOST, named
        for (long g : List.of(committed, first)) {
            GenerationState state =
                    lab.awaitGenerationState(g, GenerationState.LOST, Duration.ofSeconds(60));
            Generation gen = lab.generation(g);
            assertThat(state).as("generation " + g + ": " + gen).isEqualTo(GenerationState.LOST);
            assertThat(gen.getLostReason())
                    .as("the loss of " + g + " names the dead agent")
                    .contains("Mooncake agent pid " + agent);
        }
        Map<String, Long> before = Ledger.generations(lab);
        List<Engines.Ended> ended =
                Engines.update(lab.engines(), LabCase.UPDATE_TIMEOUT, LabCase.UPDATE_WAIT);
        String outcomes = String.join("; ", ended.stream().map(Engines.Ended::describe).toList());
        Ledger ledger = new Ledger();
        ledger.noneAdvanced(lab, before);
        long verified = ledger.observe(lab, Set.of());
        assertThat(ledger.problems).as("corrupted or partial bytes served").isEmpty();
        for (Engines.Ended e : ended) {
            assertThat(e.updated()).as("no engine loads a LOST generation: " + outcomes).isFalse();
            assertThat(e.describe()).as("the refusal says why").contains("LOST");
        }
        for (RolloutEngine engine : lab.engines()) {
            assertThat(engine.status().getGeneration())
                    .as(engine.instance() + " stays on the whole bytes of " + first)
                    .isEqualTo(first);
        }
        System.out.printf(
                "publisher 0's agent %d killed after commit of %d: %s; %d bytes served verified%n",
                agent, committed, outcomes, verified);

        // the restarted agent mounted a new, empty segment: the next publish reaches everyone
        lab.reRegisterAll();
        long next = lab.publish(steps.getAsLong());
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(next)).as("every byte of " + next).isPositive();
        assertThat(agentOf(publisher)).as("a new agent serves the publisher").isNotEqualTo(agent);
    }

    /**
     * Kills (SIGKILL) the Mooncake agent of the service {@code pid}: its child process running
     * {@code weight_relay.mooncake_agent}. Returns the agent's pid once it is dead (a zombie until
     * its parent, maybe frozen, reaps it).
     */
    public static long killAgentOf(long pid) throws Exception {
        long agent = agentOf(pid);
        MidApply.signal("KILL", agent);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            Path stat = Path.of("/proc/" + agent + "/stat");
            if (!Files.exists(stat)) {
                return agent;
            }
            String s = Files.readString(stat);
            if (s.substring(s.lastIndexOf(')') + 2).startsWith("Z")) {
                return agent;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("agent " + agent + " of " + pid + " still runs after SIGKILL");
    }

    /** The pid of the Mooncake agent the service {@code pid} runs (exactly one). */
    private static long agentOf(long pid) {
        List<Long> agents =
                ProcessHandle.of(pid)
                        .orElseThrow()
                        .children()
                        .filter(
                                c ->
                                        c.info()
                                                .commandLine()
                                                .orElse("")
                                                .contains("weight_relay.mooncake_agent"))
                        .map(ProcessHandle::pid)
                        .toList();
        assertThat(agents).as("the Mooncake agent of process " + pid).hasSize(1);
        return agents.get(0);
    }
}
