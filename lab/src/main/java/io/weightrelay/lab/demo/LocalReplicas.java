package io.weightrelay.lab.demo;

import io.weightrelay.api.publisher.client.model.SegmentInfo;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.trainer.client.PublisherClient;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a Mooncake lab's published objects live, asked of the Mooncake master from outside the
 * publishers: every object of a generation is located ({@link StoreClient#locate}, one {@code
 * batch_get_replica_desc}) through a reading data plane of this JVM, and its replicas' transport
 * endpoints compared with the endpoint the master names for its own publisher's mounted segment
 * ({@code SegmentInfo.storeEndpoint}). A publisher prefers, never requires, its own segment, so a
 * share below 1 means a segment was full, not that a byte is wrong.
 */
final class LocalReplicas {

    /**
     * What one generation showed: its objects, and those whose only replica is their publisher's.
     */
    record Count(long objects, long local) {
        double ratio() {
            return objects == 0 ? 0 : (double) local / objects;
        }

        Count plus(Count other) {
            return new Count(objects + other.objects, local + other.local);
        }
    }

    private final Dataplane reader;
    private final Map<String, String> ownEndpointOfNode = new HashMap<>();

    /**
     * @param reader a data plane of this JVM on the lab's Mooncake (a reading client)
     * @param publishers every publisher of the lab; each must report its store endpoint
     */
    LocalReplicas(Dataplane reader, List<PublisherClient> publishers) {
        this.reader = reader;
        for (PublisherClient p : publishers) {
            SegmentInfo info = p.segment();
            if (info.getStoreEndpoint() == null) {
                throw new IllegalStateException(
                        "publisher of node '"
                                + info.getNode()
                                + "' reports no store endpoint: it is not on"
                                + " relay.dataplane.engine=mooncake");
            }
            ownEndpointOfNode.put(info.getNode(), info.getStoreEndpoint());
        }
    }

    /**
     * Counts {@code generation}'s objects of {@code manifest} whose replicas all lie in the segment
     * of the publisher {@code nodeOfTensor} assigned their tensor to.
     */
    Count of(SourceManifest manifest, long generation, Map<String, String> nodeOfTensor) {
        List<String> keys = new ArrayList<>();
        List<String> own = new ArrayList<>();
        for (StoredFragment f : manifest.fragments()) {
            String node = nodeOfTensor.get(f.tensor());
            String endpoint = ownEndpointOfNode.get(node);
            if (endpoint == null) {
                throw new IllegalStateException(
                        "tensor '"
                                + f.tensor()
                                + "' was assigned to node '"
                                + node
                                + "', which runs no publisher of this lab");
            }
            keys.add(new GenerationId(manifest.model(), generation).objectKey(f.fragment()));
            own.add(endpoint);
        }
        List<StoreClient.Located> where = reader.store().locate(keys);
        long local = 0;
        for (int i = 0; i < keys.size(); i++) {
            List<String> replicas = where.get(i).segments();
            String mine = own.get(i);
            if (!replicas.isEmpty() && replicas.stream().allMatch(mine::equals)) {
                local++;
            }
        }
        return new Count(keys.size(), local);
    }
}
