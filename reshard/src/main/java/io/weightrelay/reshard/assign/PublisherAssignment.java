package io.weightrelay.reshard.assign;

import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Tensor to trainer node, byte-balanced (largest tensors first onto the least-loaded node, ties to
 * the lower tensor and node index), a pure function of the manifest and the trainer nodes. A
 * block-FP8 scale tensor goes with its weight.
 *
 * @param trainerNodes trainer node names, sorted
 * @param nodeOfTensor index into {@code trainerNodes} for each manifest tensor
 * @param bytesPerNode bytes published by each trainer node
 */
public record PublisherAssignment(
        List<String> trainerNodes, int[] nodeOfTensor, long[] bytesPerNode) {

    public PublisherAssignment {
        trainerNodes = List.copyOf(trainerNodes);
        nodeOfTensor = nodeOfTensor.clone();
        bytesPerNode = bytesPerNode.clone();
    }

    public static PublisherAssignment assign(SourceManifest manifest, Topology topology) {
        List<String> nodes = topology.nodes(Role.TRAINER).stream().map(Node::name).toList();
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("topology has no trainer node");
        }
        List<TensorSpec> tensors = manifest.tensors();
        // A block-FP8 scale tensor is computed by the publisher that converts its weight: it goes
        // where the weight goes, and the pair is placed as one.
        Map<String, Integer> weightOfScale = BlockScales.weightOfScale(tensors);
        int[] scaleOf = new int[tensors.size()];
        Arrays.fill(scaleOf, -1);
        boolean[] follower = new boolean[tensors.size()];
        Map<String, Integer> index = weightOfScale.isEmpty() ? Map.of() : manifest.tensorIndex();
        for (Map.Entry<String, Integer> e : weightOfScale.entrySet()) {
            int scale = index.get(e.getKey());
            scaleOf[e.getValue()] = scale;
            follower[scale] = true;
        }
        List<Integer> leaders = new ArrayList<>(tensors.size());
        long[] bytes = new long[tensors.size()];
        for (int i = 0; i < tensors.size(); i++) {
            bytes[i] = tensors.get(i).bytes();
            if (!follower[i]) {
                leaders.add(i);
            }
        }
        for (int i = 0; i < tensors.size(); i++) {
            if (scaleOf[i] >= 0) {
                bytes[i] += bytes[scaleOf[i]];
            }
        }
        Integer[] order = leaders.toArray(Integer[]::new);
        Arrays.sort(
                order, (a, b) -> bytes[a] != bytes[b] ? Long.compare(bytes[b], bytes[a]) : a - b);
        long[] load = new long[nodes.size()];
        int[] nodeOf = new int[tensors.size()];
        // A min-heap of (load, node) keeps this O(n log m) for tens of thousands of tensors.
        int[] heap = new int[nodes.size()];
        for (int i = 0; i < heap.length; i++) {
            heap[i] = i;
        }
        for (int t : order) {
            int node = heap[0];
            nodeOf[t] = node;
            if (scaleOf[t] >= 0) {
                nodeOf[scaleOf[t]] = node;
            }
            load[node] += bytes[t];
            siftDown(heap, load, 0);
        }
        return new PublisherAssignment(nodes, nodeOf, load);
    }

    private static boolean less(long[] load, int a, int b) {
        return load[a] != load[b] ? load[a] < load[b] : a < b;
    }

    private static void siftDown(int[] heap, long[] load, int index) {
        int n = heap.length;
        while (true) {
            int left = 2 * index + 1;
            if (left >= n) {
                return;
            }
            int child = left;
            if (left + 1 < n && less(load, heap[left + 1], heap[left])) {
                child = left + 1;
            }
            if (!less(load, heap[child], heap[index])) {
                return;
            }
            int tmp = heap[index];
            heap[index] = heap[child];
            heap[child] = tmp;
            index = child;
        }
    }

    @Override
    public int[] nodeOfTensor() {
        return nodeOfTensor.clone();
    }

    @Override
    public long[] bytesPerNode() {
        return bytesPerNode.clone();
    }

    public String nodeOf(int tensorIndex) {
        return trainerNodes.get(nodeOfTensor[tensorIndex]);
    }

    /** Tensor name to trainer node name. */
    public Map<String, String> byTensorName(SourceManifest manifest) {
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < nodeOfTensor.length; i++) {
            map.put(manifest.tensors().get(i).name(), nodeOf(i));
        }
        return map;
    }

    /** Max over mean of bytes published per trainer node; 1.0 is perfect. */
    public double balance() {
        long max = 0;
        long sum = 0;
        for (long b : bytesPerNode) {
            max = Math.max(max, b);
            sum += b;
        }
        return sum == 0 ? 1.0 : max / ((double) sum / bytesPerNode.length);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PublisherAssignment p
                && trainerNodes.equals(p.trainerNodes)
                && Arrays.equals(nodeOfTensor, p.nodeOfTensor)
                && Arrays.equals(bytesPerNode, p.bytesPerNode);
    }

    @Override
    public int hashCode() {
        return trainerNodes.hashCode() * 31 + Arrays.hashCode(nodeOfTensor);
    }

    @Override
    public String toString() {
        return "PublisherAssignment[nodes=" + trainerNodes.size() + ", balance=" + balance() + "]";
    }
}
