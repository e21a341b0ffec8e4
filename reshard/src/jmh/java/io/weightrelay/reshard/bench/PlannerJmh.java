package io.weightrelay.reshard.bench;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.topology.Topology;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/** Planning and slice encoding, warm, for the catalogued models. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx4g"})
@Warmup(iterations = 2)
@Measurement(iterations = 3)
public class PlannerJmh {
    @Param({"qwen2.5-7b"})
    public String model;

    @Param({"direct", "compat"})
    public String mode;

    @Param({"8"})
    public int nodes;

    private SourceManifest manifest;
    private TargetPlacement placement;
    private Topology topology;
    private Plan plan;
    private String instance;

    @Setup
    public void setUp() {
        List<TensorLayout> layout = ModelCatalog.layout(model);
        manifest = Fragmenter.fragment(model, layout.stream().map(TensorLayout::spec).toList());
        topology = Topology.uniform(nodes, nodes, 8, 400);
        placement =
                Placements.of(
                        layout,
                        nodes,
                        nodes,
                        8,
                        layout.stream().anyMatch(t -> t.expert() >= 0) ? 8 : 1,
                        io.weightrelay.reshard.placement.Mode.parse(mode),
                        8);
        plan = Planner.plan(manifest, placement, topology);
        instance = placement.instances().get(0);
    }

    @Benchmark
    public Plan plan() {
        return Planner.plan(manifest, placement, topology);
    }

    @Benchmark
    public byte[] encodeSlice() {
        return Slice.of(plan, instance).encode();
    }

    @Benchmark
    public Slice decodeSlice() {
        return Slice.decode(Slice.of(plan, instance).encode());
    }

    @Benchmark
    public byte[] encodePlan() {
        return plan.encode();
    }
}
