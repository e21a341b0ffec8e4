package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class PlannerPropertiesTest {

    @Provide
    Arbitrary<Long> seeds() {
        return Arbitraries.longs();
    }

    @Property(tries = 250)
    void planCoversEveryTargetByteOnceAndReadsEveryNeededByteOnce(@ForAll("seeds") long seed) {
        Scenario s = Scenario.random(seed);
        Plan plan = Planner.plan(s.manifest(), s.placement(), s.topology(), s.options());
        Demands demands = Demands.of(s.manifest(), s.placement());

        ValidationReport report =
                PlanValidator.validate(plan, s.manifest(), s.placement(), demands);
        assertThat(report.problems()).as("seed %d", seed).isEmpty();
        assertThat(report.readBytes()).isEqualTo(demands.storeBytes());
        assertThat(report.deliveredBytes()).isEqualTo(demands.targetStoredBytes());
        assertThat(report.readBytes()).isLessThanOrEqualTo(s.manifest().totalBytes());
        for (int i = 0; i < plan.readCount(); i++) {
            assertThat(plan.readSpan(i))
                    .isLessThanOrEqualTo(
                            Math.max(s.options().readMaxBytes(), rowBytesOf(plan, s, i)));
        }
    }

    /** The planner never splits a dim-0 row of a stored object, so a span may be one such row. */
    private static long rowBytesOf(Plan plan, Scenario s, int read) {
        var f = s.manifest().fragments().get(plan.readObject(read));
        long rows = f.shape().rank() == 0 ? 1 : Math.max(1, f.shape().dim(0));
        return f.bytes() / rows;
    }

    @Property(tries = 200)
    void executingEveryLoadersSliceDeliversTheSourceBytes(@ForAll("seeds") long seed) {
        Scenario s = Scenario.random(seed);
        Plan plan = Planner.plan(s.manifest(), s.placement(), s.topology(), s.options());
        ByteWorld world = ByteWorld.run(plan, s.manifest(), s.placement(), seed);

        assertThat(world.firstMismatch(s.manifest(), s.placement())).as("seed %d", seed).isNull();
        assertThat(world.storeBytesRead)
                .isEqualTo(Demands.of(s.manifest(), s.placement()).storeBytes());
    }

    @Property(tries = 200)
    void everyLoaderValidatesItsOwnSlice(@ForAll("seeds") long seed) {
        Scenario s = Scenario.random(seed);
        Plan plan = Planner.plan(s.manifest(), s.placement(), s.topology(), s.options());
        SafetensorsLayout layout = SafetensorsLayout.of(s.manifest());
        long delivered = 0;
        for (String instance : s.placement().instances()) {
            List<Worker> mine =
                    s.placement().workers().stream()
                            .filter(w -> w.instance().equals(instance))
                            .toList();
            Slice slice = Slice.decode(Slice.of(plan, instance).encode());
            ValidationReport report = SliceValidator.validate(slice, mine, layout);
            assertThat(report.problems()).as("seed %d instance %s", seed, instance).isEmpty();
            delivered += report.deliveredBytes();
        }
        assertThat(delivered)
                .isEqualTo(Demands.of(s.manifest(), s.placement()).targetStoredBytes());
    }

    @Property(tries = 150)
    void encodedSlicesAreTheBytesOfTheBuiltOnes(@ForAll("seeds") long seed) {
        Scenario s = Scenario.random(seed);
        Plan plan = Planner.plan(s.manifest(), s.placement(), s.topology(), s.options());
        java.util.Set<String> instances = new java.util.TreeSet<>(s.placement().instances());
        java.util.Map<String, byte[]> encoded = Slice.encoded(plan, instances);
        assertThat(encoded.keySet()).isEqualTo(instances);
        for (java.util.Map.Entry<String, Slice> e : Slice.of(plan, instances).entrySet()) {
            assertThat(encoded.get(e.getKey()))
                    .as("seed %d instance %s", seed, e.getKey())
                    .isEqualTo(e.getValue().encode());
        }
        String one = instances.iterator().next();
        assertThat(Slice.encoded(plan, java.util.Set.of(one)).get(one))
                .isEqualTo(Slice.of(plan, one).encode());
    }

    @Property(tries = 150)
    void sameInputsInAnyOrderGiveIdenticalPlanBytes(@ForAll("seeds") long seed) {
        Scenario s = Scenario.random(seed);
        byte[] first =
                Planner.plan(s.manifest(), s.placement(), s.topology(), s.options()).encode();

        List<Worker> shuffled = new ArrayList<>(s.placement().workers());
        Collections.shuffle(shuffled, new Random(seed));
        List<io.weightrelay.reshard.topology.Node> nodes = new ArrayList<>(s.topology().nodes());
        Collections.reverse(nodes);
        TargetPlacement placement = new TargetPlacement(shuffled);
        Topology topology = new Topology(nodes);
        assertThat(placement.digest()).isEqualTo(s.placement().digest());
        assertThat(topology.digest()).isEqualTo(s.topology().digest());

        Plan again = Planner.plan(s.manifest(), placement, topology, s.options());
        assertThat(again.encode()).isEqualTo(first);
        assertThat(Plan.decode(first).encode()).isEqualTo(first);
    }

    @Property(tries = 150)
    void contractsRoundTripThroughTheirEncodings(@ForAll("seeds") long seed) {
        Scenario s = Scenario.random(seed);
        TargetPlacement placement = TargetPlacement.decode(s.placement().encode());
        assertThat(placement).isEqualTo(s.placement());
        assertThat(placement.digest()).isEqualTo(s.placement().digest());
        assertThat(Topology.decode(s.topology().encode())).isEqualTo(s.topology());
        assertThat(io.weightrelay.reshard.manifest.SourceManifest.decode(s.manifest().encode()))
                .isEqualTo(s.manifest());
    }
}
