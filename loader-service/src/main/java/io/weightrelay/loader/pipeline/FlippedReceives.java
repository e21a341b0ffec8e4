package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.plan.Slice;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Lab only ({@code relay.loader.flip-received-file}): while the file exists, each update flips one
 * byte that another loader wrote into this loader's workers (the first byte of the first such
 * write; one of its own when no other loader writes here) after it landed and before this loader
 * proves its buffers, as a byte changed on a link, by a late write or in bad memory would be.
 * Removing the file makes the buffers healthy again.
 */
public final class FlippedReceives implements LandedFault {
    private final Path file;

    public FlippedReceives(Path file) {
        this.file = file;
    }

    @Override
    public void beforeProof(SliceSchedule slice, LandedProof.Bytes bytes) {
        if (!Files.exists(file)) {
            return;
        }
        Slice plan = slice.plan();
        int chosen = -1;
        for (int v = 0; v < plan.receiveCount(); v++) {
            if (!slice.myWorkers().contains(plan.receiveDst(v)) || plan.receiveBytes(v) == 0) {
                continue;
            }
            boolean fromOther = !plan.workerInstance(plan.receiveFrom(v)).equals(slice.instance());
            if (chosen < 0 || fromOther) {
                chosen = v;
            }
            if (fromOther) {
                break;
            }
        }
        if (chosen < 0) {
            return;
        }
        ByteBuffer at =
                bytes.of(
                        plan.workerId(plan.receiveDst(chosen)),
                        plan.buffer(plan.receiveBuffer(chosen)),
                        plan.receiveDstOffset(chosen),
                        1);
        at.put(0, (byte) (at.get(0) ^ 0x5a));
    }
}
