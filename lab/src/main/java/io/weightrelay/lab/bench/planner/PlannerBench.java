package io.weightrelay.lab.bench.planner;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.plan.Demands;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.PlanValidator;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.plan.ValidationReport;
import io.weightrelay.reshard.timing.Traffic;
import io.weightrelay.reshard.topology.Topology;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code relay bench planner}: plans one catalogued deployment and prints one JSON line. Only the
 * planner call is timed ({@code plan_ms}, cold: first call in a fresh JVM, one thread); building
 * the inputs, validating and measuring are not.
 */
public final class PlannerBench {
    private PlannerBench() {}

    /** {@code ./relay bench planner}: prints the JSON line; exit 1 if the plan broke. */
    public static void run(PlannerOptions options) {
        try {
            Result result = plan(options);
            System.out.println(result.toJson());
            // Wall time is the figure; on a shared machine the thread's CPU time tells load apart.
            System.err.printf(
                    "bench planner: plan cpu %d ms, wall %d ms%n",
                    result.planCpuMs(), result.planMs());
        } catch (RuntimeException e) {
            System.err.println("bench planner: " + e.getMessage());
            System.exit(1);
        }
    }

    private static final Pattern REFERENCE_MS = Pattern.compile("\"reference_plan_ms\":\\s*(\\d+)");

    /** The figures {@code bench planner} prints, plus the planning thread's CPU time. */
    public record Result(
            int tensors,
            long modelBytes,
            long planMs,
            long sliceBytesMax,
            long storeReadBytes,
            double storeReadRatio,
            long deliveryBytes,
            double deliveryRatio,
            int networkSendsPerTensorMax,
            double nicBalance,
            double trainerBalance,
            double predictedUpdateS,
            double lowerBoundS,
            boolean valid,
            long planCpuMs,
            long peakHeapBytes,
            String reference) {

        public String toJson() {
            return String.format(
                            Locale.ROOT,
                            "{\"tensors\":%d,\"model_bytes\":%d,\"plan_ms\":%d,\"slice_bytes_max\":%d,"
                                    + "\"store_read_bytes\":%d,\"store_read_ratio\":%s,"
                                    + "\"delivery_bytes\":%d,\"delivery_ratio\":%s,"
                                    + "\"network_sends_per_tensor_max\":%d,\"nic_balance\":%s,"
                                    + "\"trainer_balance\":%s,\"predicted_update_s\":%s,"
                                    + "\"lower_bound_s\":%s,\"valid\":%s",
                            tensors,
                            modelBytes,
                            planMs,
                            sliceBytesMax,
                            storeReadBytes,
                            number(storeReadRatio),
                            deliveryBytes,
                            number(deliveryRatio),
                            networkSendsPerTensorMax,
                            number(nicBalance),
                            number(trainerBalance),
                            number(predictedUpdateS),
                            number(lowerBoundS),
                            valid)
                    + against()
                    + "}";
        }

        /**
         * With {@code --against}: our peak heap and the reference's members, plus {@code
         * reference_vs_ours} (its planning time over ours) when it planned; else nothing.
         */
        private String against() {
            if (reference == null) {
                return "";
            }
            StringBuilder out = new StringBuilder(",\"peak_heap_bytes\":").append(peakHeapBytes);
            String members = reference.strip();
            // The reference's object, its members spliced into ours.
            out.append(',').append(members, 1, members.length() - 1);
            Matcher ms = REFERENCE_MS.matcher(members);
            if (ms.find()) {
                out.append(",\"reference_vs_ours\":")
                        .append(number(Double.parseDouble(ms.group(1)) / Math.max(1, planMs)));
            }
            return out.toString();
        }

        private static String number(double value) {
            if (Double.isNaN(value) || Double.isInfinite(value)) {
                return "null";
            }
            String plain =
                    java.math.BigDecimal.valueOf(Math.round(value * 10000) / 10000.0)
                            .stripTrailingZeros()
                            .toPlainString();
            return plain.contains(".") ? plain : plain + ".0";
        }
    }

    public static Result plan(PlannerOptions args) {
        List<TensorLayout> layout = ModelCatalog.layout(args.model());
        if (args.rolloutDtype() == DType.F8_E4M3) {
            layout = ModelCatalog.blockFp8(layout, Fp8BlockRule.defaults());
        }
        SourceManifest manifest =
                Fragmenter.fragment(args.model(), layout.stream().map(TensorLayout::spec).toList());
        Topology topology =
                Topology.uniform(
                        args.trainerNodes(),
                        args.rolloutNodes(),
                        args.nicsPerNode(),
                        args.nicGbps());
        TargetPlacement placement =
                args.gpusPerNode() > 0
                        ? Placements.of(
                                layout,
                                args.rolloutNodes(),
                                args.instances(),
                                args.parallelism(),
                                args.mode(),
                                args.nicsPerNode(),
                                args.gpusPerNode())
                        : Placements.of(
                                layout,
                                args.rolloutNodes(),
                                args.instances(),
                                args.parallelism(),
                                args.mode(),
                                args.nicsPerNode());

        // Settle the garbage of building the inputs first, so its collection is not billed to
        // planning; the planner itself still runs cold (first call in the JVM).
        System.gc();
        List<MemoryPoolMXBean> heap =
                ManagementFactory.getMemoryPoolMXBeans().stream()
                        .filter(pool -> pool.getType() == MemoryType.HEAP)
                        .toList();
        heap.forEach(MemoryPoolMXBean::resetPeakUsage);
        java.lang.management.ThreadMXBean threads =
                java.lang.management.ManagementFactory.getThreadMXBean();
        long cpuStart = threads.getCurrentThreadCpuTime();
        long start = System.nanoTime();
        Plan plan = Planner.plan(manifest, placement, topology);
        long planMs = (System.nanoTime() - start) / 1_000_000;
        long planCpuMs = (threads.getCurrentThreadCpuTime() - cpuStart) / 1_000_000;
        // Inputs included, as the reference's peak resident set includes its own.
        long peakHeapBytes = heap.stream().mapToLong(pool -> pool.getPeakUsage().getUsed()).sum();
        String reference = null;
        if (args.against() != null) {
            try {
                reference = ReferencePlanner.plan(manifest, placement, args, args.instances());
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while the reference planned", e);
            }
        }

        Demands demands = Demands.of(manifest, placement);
        ValidationReport report = PlanValidator.validate(plan, manifest, placement, demands);
        Traffic traffic = Traffic.of(plan);
        PublisherAssignment assignment = PublisherAssignment.assign(manifest, topology);
        long sliceMax = 0;
        for (Slice slice : Slice.all(plan).values()) {
            sliceMax = Math.max(sliceMax, slice.encode().length);
        }
        if (!report.valid()) {
            report.problems().forEach(p -> System.err.println("invalid: " + p));
        }
        return new Result(
                manifest.tensors().size(),
                manifest.totalBytes(),
                planMs,
                sliceMax,
                report.readBytes(),
                ratio(report.readBytes(), demands.storeBytes()),
                report.deliveredBytes(),
                ratio(report.deliveredBytes(), demands.targetStoredBytes()),
                networkSendsPerReadMax(plan),
                traffic.nicBalance(),
                assignment.balance(),
                ClusterModel.predictedSeconds(plan, traffic),
                ClusterModel.lowerBoundSeconds(demands, topology, assignment),
                report.valid(),
                planCpuMs,
                peakHeapBytes,
                reference);
    }

    private static double ratio(long part, long whole) {
        return whole == 0 ? (part == 0 ? 1.0 : Double.POSITIVE_INFINITY) : (double) part / whole;
    }

    /**
     * The most other nodes any read sends its bytes to: in compatibility mode each remote node gets
     * one send per byte of every tensor, so this is {@code nodes - 1}.
     */
    static int networkSendsPerReadMax(Plan plan) {
        int max = 0;
        Set<Integer> nodes = new LinkedHashSet<>();
        for (int i = 0; i < plan.readCount(); i++) {
            nodes.clear();
            int readerNode = plan.workerNode(plan.readReader(i));
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                int node = plan.workerNode(plan.writeDst(x));
                if (node != readerNode) {
                    nodes.add(node);
                }
            }
            max = Math.max(max, nodes.size());
        }
        return max;
    }
}
