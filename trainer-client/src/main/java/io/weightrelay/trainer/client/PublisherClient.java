package io.weightrelay.trainer.client;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.RemoteProblem;
import io.weightrelay.api.publisher.client.OwnerApi;
import io.weightrelay.api.publisher.client.PublishApi;
import io.weightrelay.api.publisher.client.StagingApi;
import io.weightrelay.api.publisher.client.invoker.ApiClient;
import io.weightrelay.api.publisher.client.model.PublishBatchRequest;
import io.weightrelay.api.publisher.client.model.PublishBatchResult;
import io.weightrelay.api.publisher.client.model.PublishStatus;
import io.weightrelay.api.publisher.client.model.Reservation;
import io.weightrelay.api.publisher.client.model.ReservationRequest;
import io.weightrelay.api.publisher.client.model.SegmentInfo;
import io.weightrelay.api.publisher.client.model.StagedTensor;
import io.weightrelay.api.publisher.client.model.StagingInfo;
import io.weightrelay.reshard.manifest.GenerationId;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Supplier;
import org.springframework.web.client.RestClientResponseException;

/**
 * One rank's connection to its node's publisher-service: REST calls of the protocol and the mapped
 * staging file (in windows of at most {@link #WINDOW} plus one batch, each mapped once).
 *
 * <p>Thread safe; share one per node and process.
 */
public final class PublisherClient {

    /** Stride of the staging file's mapped windows. */
    public static final long WINDOW = 1L << 30;

    private final String baseUrl;
    private final StagingApi staging;
    private final PublishApi publish;
    private final OwnerApi owner;
    private volatile StagingInfo info;
    private final ConcurrentMap<Integer, MappedByteBuffer> windows = new ConcurrentHashMap<>();

    private PublisherClient(String baseUrl, ApiClient client) {
        this.baseUrl = baseUrl;
        this.staging = new StagingApi(client);
        this.publish = new PublishApi(client);
        this.owner = new OwnerApi(client);
    }

    /**
     * A client of the publisher at {@code baseUrl}.
     *
     * @param token bearer token of the trainer role, or null when the service runs without tokens
     * @param timeout connect and read timeout of one call (a batch call converts and stores)
     */
    public static PublisherClient connect(String baseUrl, String token, Duration timeout) {
        Endpoint publisher = new Endpoint(baseUrl, token, timeout, timeout);
        return new PublisherClient(baseUrl, RelayClients.of(publisher).publisher());
    }

    public String baseUrl() {
        return baseUrl;
    }

    /** {@code GET /api/v1/staging}, cached after the first call. */
    public StagingInfo stagingInfo() {
        StagingInfo i = info;
        if (i == null) {
            i = info = call("read staging info", staging::getStaging);
        }
        return i;
    }

    /**
     * A read-write view of [offset, offset + length) of the node's staging file (staging offsets
     * are offsets in it), for a range inside one reservation. The file may be larger than one Java
     * mapping (in segment mode it is the whole store segment), so it is mapped in windows, each
     * once, on first use: window {@code i} starts at {@code i * WINDOW} and reaches one batch bound
     * further, so every reservation lies inside the window its start falls in.
     */
    public ByteBuffer stagingBytes(long offset, int length) {
        StagingInfo i = stagingInfo();
        if (offset < 0 || length < 0 || length > i.getMaxBatchBytes()) {
            throw new IllegalArgumentException(
                    "staging range [" + offset + ", +" + length + ") is not inside one batch");
        }
        int index = Math.toIntExact(offset / WINDOW);
        MappedByteBuffer window = windows.get(index);
        if (window == null) {
            window = windows.computeIfAbsent(index, k -> mapWindow(i, k));
        }
        long start = (long) index * WINDOW;
        if (offset + length > start + window.capacity()) {
            throw new IllegalArgumentException(
                    "staging range [" + offset + ", +" + length + ") ends after " + i.getPath());
        }
        return window.slice(Math.toIntExact(offset - start), length);
    }

    private MappedByteBuffer mapWindow(StagingInfo i, int index) {
        long start = (long) index * WINDOW;
        long size = Math.min(i.getFileSize() - start, WINDOW + i.getMaxBatchBytes());
        try (FileChannel channel =
                FileChannel.open(
                        Path.of(i.getPath()), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return channel.map(FileChannel.MapMode.READ_WRITE, start, Math.max(0, size));
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot map staging "
                            + i.getPath()
                            + " of "
                            + baseUrl
                            + " (a rank must run on the publisher's node)",
                    e);
        }
    }

    /**
     * Reserves room for one batch, waiting while staging is full (429) for at most {@code maxWait}.
     */
    public Reservation reserve(long bytes, Duration maxWait) {
        return reserve(bytes, bytes, maxWait);
    }

    /**
     * Reserves room for one batch as {@link #reserve(GenerationId, long, long, Duration)} does,
     * settling for as little as {@code minBytes} when staging has no contiguous {@code bytes}.
     */
    public Reservation reserve(long bytes, long minBytes, Duration maxWait) {
        return reserve(new ReservationRequest().bytes(bytes), Math.min(bytes, minBytes), maxWait);
    }

    /**
     * Reserves room for one batch of {@code generation}, waiting while staging is full (429) for at
     * most {@code maxWait}; stops at once (409 {@code generation-failed}) when this node's part of
     * the generation has failed meanwhile.
     */
    public Reservation reserve(GenerationId generation, long bytes, Duration maxWait) {
        return reserve(generation, bytes, bytes, maxWait);
    }

    /**
     * Like {@link #reserve(GenerationId, long, Duration)}, settling for less when staging has no
     * contiguous {@code bytes}: after a 429 the request halves at once, down to {@code minBytes}
     * (what the caller's next write needs), and only a refused {@code minBytes} waits. Staging that
     * generations of objects left with holes then still takes a batch, in smaller reservations.
     */
    public Reservation reserve(
            GenerationId generation, long bytes, long minBytes, Duration maxWait) {
        return reserve(
                new ReservationRequest()
                        .bytes(bytes)
                        .model(generation.model())
                        .generation(generation.generation()),
                Math.min(bytes, minBytes),
                maxWait);
    }

    private Reservation reserve(ReservationRequest request, long minBytes, Duration maxWait) {
        long preferred = request.getBytes();
        long deadline = System.nanoTime() + maxWait.toNanos();
        while (true) {
            try {
                return staging.reserveStaging(request);
            } catch (RestClientResponseException e) {
                long asked = request.getBytes();
                boolean full = e.getStatusCode().value() == 429;
                if (full && asked > minBytes) {
                    request.bytes(Math.max(minBytes, asked / 2));
                    continue;
                }
                if (!full || System.nanoTime() > deadline) {
                    throw RelayCallException.of(
                            baseUrl,
                            "reserve "
                                    + asked
                                    + " bytes"
                                    + (asked < preferred ? " (of " + preferred + " wanted)" : ""),
                            e);
                }
                Pause.sleep(
                        RemoteProblem.retryAfter(e).orElse(Duration.ofMillis(200)),
                        "staging was full");
                // room may have come back whole: ask for the batch again
                request.bytes(preferred);
            } catch (RuntimeException e) {
                throw RelayCallException.of(baseUrl, "reserve " + request.getBytes() + " bytes", e);
            }
        }
    }

    /** Gives a reservation back unused. */
    public void release(String reservationId) {
        call(
                "release reservation " + reservationId,
                () -> {
                    staging.releaseStaging(reservationId);
                    return null;
                });
    }

    /** Hands over one batch: one REST call, however many tensors it holds. */
    public PublishBatchResult handOver(
            GenerationId generation, String reservationId, List<StagedTensor> tensors) {
        return call(
                "hand over batch of "
                        + tensors.size()
                        + " tensor(s) of "
                        + generation.model()
                        + "/"
                        + generation.generation(),
                () ->
                        publish.publishBatch(
                                generation.model(),
                                generation.generation(),
                                new PublishBatchRequest()
                                        .reservationId(reservationId)
                                        .tensors(tensors)));
    }

    /** Prepares the node for the generation (its layout is loaded before the first batch). */
    public PublishStatus open(GenerationId generation) {
        return call(
                "open " + generation.path(),
                () -> publish.openPublish(generation.model(), generation.generation()));
    }

    /** Finishes this node's part of the generation. */
    public PublishStatus finish(GenerationId generation) {
        return call(
                "finish " + generation.path(),
                () -> publish.finishPublish(generation.model(), generation.generation()));
    }

    public PublishStatus status(GenerationId generation) {
        return call(
                "read status of " + generation.path(),
                () -> publish.getPublishStatus(generation.model(), generation.generation()));
    }

    public SegmentInfo segment() {
        return call("read segment info", owner::getSegmentInfo);
    }

    private <T> T call(String what, Supplier<T> body) {
        try {
            return body.get();
        } catch (RuntimeException e) {
            throw RelayCallException.of(baseUrl, what, e);
        }
    }
}
