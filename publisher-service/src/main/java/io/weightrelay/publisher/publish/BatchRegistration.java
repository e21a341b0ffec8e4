package io.weightrelay.publisher.publish;

import io.weightrelay.api.StoredObject;
import io.weightrelay.publisher.Futures;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * The register stage of a batch: tells control-api about the batch's stored objects in chunks of
 * {@code chunk} objects, sent in parallel. Thread safe.
 */
final class BatchRegistration implements AutoCloseable {

    private final ControlPlane control;
    private final String node;
    private final int chunk;
    private final ExecutorService senders = Publisher.pool("publish-register-", 2);

    BatchRegistration(ControlPlane control, String node, int chunk) {
        this.control = control;
        this.node = node;
        this.chunk = chunk;
    }

    /** Registers the objects; waits for every chunk and rethrows the first refusal. */
    void register(GenerationLayout layout, List<StoredObject> objects) {
        List<CompletableFuture<Void>> sent = new ArrayList<>();
        for (int from = 0; from < objects.size(); from += chunk) {
            List<StoredObject> part = objects.subList(from, Math.min(objects.size(), from + chunk));
            sent.add(
                    CompletableFuture.runAsync(
                            () -> control.register(layout.id(), node, part), senders));
        }
        Futures.joinAll(sent);
    }

    @Override
    public void close() {
        senders.shutdownNow();
    }
}
