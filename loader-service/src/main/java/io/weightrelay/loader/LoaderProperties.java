package io.weightrelay.loader;

import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * The loader's settings ({@code relay.loader.*}); its data plane is {@code relay.dataplane.*},
 * shared with every service.
 *
 * @param controlUrl base URL of control-api, or of several instances behind one Redis separated by
 *     commas (each call fails over to the next that can be reached)
 * @param token bearer token of the {@code loader} role for control-api (empty: none)
 * @param advertiseUrl this service's base URL as registered with control-api (empty: {@code
 *     http://<relay.dataplane.advertise-host>:<server port>})
 * @param stagingSlots staging watermark in batches; at least two, so reads overlap pushes
 * @param barrierWait long-poll wait of one barrier request
 * @param leaseTtl lease a loader takes on the generation it loads (and then serves) when it
 *     prepares; control-api carries it along with every heartbeat for as long as the loader beats,
 *     so this bounds how long a loader that died keeps a generation from collection
 * @param heartbeat how often the loader renews its registry entry (well under control-api's TTL)
 * @param mapNodeSegmentsEvery how often the loader looks for new segments of its node (one Redis
 *     read unless one registered) and maps them ahead of the updates that write into them (zero:
 *     never; the updates map them)
 * @param readThreads store reads of one batch in flight at once
 * @param failBeforeBatch lab only: fail the apply before pushing this batch (-1: never)
 * @param flakyReadsFile lab only: while this file exists, every other object read goes wrong as its
 *     first word says, {@code fail} (an I/O error) or {@code wrong-bytes} (a byte flipped as it
 *     lands, checksummed as landed), as on a host with a failing NIC or bad memory (empty: never)
 * @param flipReceivedFile lab only: while this file exists, each update flips one byte another
 *     loader wrote into this loader's workers' buffers after it landed, before the loader proves
 *     them, as a link, a late write or bad memory would (empty: never)
 * @param checksums take the CRC32C of every range read and report it with APPLIED, so control-api
 *     proves the bytes against the published checksums, and of every write this loader makes,
 *     reported with SENT, so each receiver proves its buffers before it reports APPLIED (off only
 *     to measure what that costs; control-api then refuses the update unless its own verification
 *     is off too)
 * @param readAhead start an update's store reads once this loader is prepared, while it waits for
 *     the others (they fill its staging only). Off by default: measured, it saved nothing (one
 *     machine: the reads take CPU from the others' prepares; a 2 Gbit/s shaped network: the barrier
 *     is 0.1 s of a 7.7 s update); it is for clusters whose barrier lasts seconds
 * @param warmUp run prepare's validation and scheduling on a synthetic group at start-up, before
 *     readiness, so the first update is not also the JIT's first run of that code
 * @param sessionWatch how often a loader in its apply asks control-api whether the update session
 *     failed elsewhere (and so has it apply its timeouts and liveness checks); a failed session
 *     stops the apply, naming the session's failing peer, instead of it waiting out its deadline
 *     for bytes that will not come (zero: never)
 */
@Validated
@ConfigurationProperties("relay.loader")
public record LoaderProperties(
        @NotBlank @DefaultValue("http://127.0.0.1:8080") String controlUrl,
        @DefaultValue("") String token,
        @DefaultValue("") String advertiseUrl,
        @Min(2) @DefaultValue("2") int stagingSlots,
        @NotNull @DefaultValue("30s") Duration barrierWait,
        @NotNull @DefaultValue("2m") Duration leaseTtl,
        @NotNull @DefaultValue("5s") Duration heartbeat,
        @NotNull @DefaultValue("500ms") Duration mapNodeSegmentsEvery,
        @Min(1) @DefaultValue("8") int readThreads,
        @DefaultValue("-1") int failBeforeBatch,
        @DefaultValue("") String flakyReadsFile,
        @DefaultValue("") String flipReceivedFile,
        @DefaultValue("true") boolean checksums,
        @DefaultValue("false") boolean readAhead,
        @DefaultValue("true") boolean warmUp,
        @NotNull @DefaultValue("5s") Duration sessionWatch) {}
