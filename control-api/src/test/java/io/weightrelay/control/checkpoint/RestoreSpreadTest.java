package io.weightrelay.control.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.CheckpointObject;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A restore puts each object on exactly one owner, spreading the bytes evenly. */
class RestoreSpreadTest {

    @Test
    void everyObjectGoesToOneOwnerAndTheBytesSpreadEvenlyAtKimiScale() {
        Random random = new Random(17);
        List<CheckpointObject> objects = new ArrayList<>();
        long total = 0;
        long largest = 0;
        for (int i = 0; i < 70_000; i++) {
            long size = 1 + random.nextInt(64 << 20);
            objects.add(
                    new CheckpointObject(
                            "kimi-k2/5/t" + i + "@0",
                            size,
                            "crc32c:00000000",
                            "u" + (i % 7) + ".bin",
                            i * 100L));
            total += size;
            largest = Math.max(largest, size);
        }
        List<SegmentOwner> owners = new ArrayList<>();
        for (int u = 0; u < 256; u++) {
            owners.add(new SegmentOwner("unit-" + u, "node-" + u, "h:1", 1L << 40, true));
        }
        Map<String, List<OwnerCheckpointObject>> plan = OwnerCalls.spread(objects, owners);
        Set<String> seen = new HashSet<>();
        long max = 0;
        long min = Long.MAX_VALUE;
        for (List<OwnerCheckpointObject> share : plan.values()) {
            long bytes = 0;
            String file = "";
            long offset = -1;
            for (OwnerCheckpointObject o : share) {
                assertThat(seen.add(o.getKey())).as("one copy of " + o.getKey()).isTrue();
                bytes += o.getSize();
                // each owner reads its files front to back
                assertThat(o.getFile().compareTo(file) > 0 || o.getOffset() > offset).isTrue();
                file = o.getFile();
                offset = o.getOffset();
            }
            max = Math.max(max, bytes);
            min = Math.min(min, bytes);
        }
        assertThat(seen).hasSize(objects.size());
        assertThat(plan).hasSize(owners.size());
        // Largest first to the least loaded: no owner is more than one object above another.
        assertThat(max - min).isLessThanOrEqualTo(largest);
        assertThat((double) max / (total / (double) owners.size())).isLessThan(1.1);
    }
}
