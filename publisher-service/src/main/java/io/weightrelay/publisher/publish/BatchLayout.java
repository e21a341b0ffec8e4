package io.weightrelay.publisher.publish;

import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.publisher.convert.Conversion;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.List;

/**
 * Where each fragment of one staged batch is read, how it is converted and where its output goes:
 * the staged tensors (or tensor parts) mapped onto the manifest's fragments, checked against the
 * manifest and the reservation, and, when conversions write into an output block, each converted
 * fragment's place in that block. Pure arithmetic over offsets: no byte is touched, no I/O.
 *
 * @param works the batch's fragments, in batch order (tensor by tensor, each by first element)
 */
record BatchLayout(List<Work> works) {

    BatchLayout {
        works = List.copyOf(works);
    }

    /**
     * One fragment of a batch: where its input sits in staging ({@code tensorIndex} is its tensor's
     * place in the batch), how it is converted and where its output goes (its input's place, or an
     * output block of the segment).
     */
    record Work(
            String key,
            int tensorIndex,
            long stagingOffset,
            int sourceBytes,
            Conversion conversion,
            long outputOffset,
            Scales scales) {

        boolean inPlace() {
            return outputOffset == stagingOffset;
        }

        int outputBytes() {
            return Math.toIntExact(conversion.outputBytes(sourceBytes));
        }

        /** Output bytes with the scales, each aligned, as an output block holds them. */
        long outputBlockBytes() {
            return StagingArea.align(outputBytes())
                    + (scales == null ? 0 : StagingArea.align(scales.bytes()));
        }

        /** Output (and scales right after it) at {@code offset} of an output block. */
        Work outputAt(long offset) {
            Scales moved =
                    scales == null ? null : scales.at(offset + StagingArea.align(outputBytes()));
            return new Work(
                    key, tensorIndex, stagingOffset, sourceBytes, conversion, offset, moved);
        }
    }

    /**
     * Where the block scales of a block-FP8 fragment go: object {@code key}, {@code bytes} long, at
     * {@code offset} (in place: in the fragment's staged bytes right after its E4M3 output).
     */
    record Scales(String key, long rows, long cols, int bytes, long offset) {
        Scales at(long where) {
            return new Scales(key, rows, cols, bytes, where);
        }
    }

    /** The keys of every object the batch stores: each fragment, then its scales if it has any. */
    List<String> keys() {
        List<String> keys = new ArrayList<>();
        for (Work w : works) {
            keys.add(w.key());
            if (w.scales() != null) {
                keys.add(w.scales().key());
            }
        }
        return keys;
    }

    /** The size of the output block the converted fragments need (0 when all pass through). */
    long outputBlockBytes() {
        long bytes = 0;
        for (Work w : works) {
            if (w.conversion() != Conversion.PASS_THROUGH) {
                bytes += w.outputBlockBytes();
            }
        }
        return bytes;
    }

    /**
     * The same batch with every converted fragment's output (and scales) in the output block at
     * {@code block}, one after another in batch order; pass-through fragments stay in place.
     */
    BatchLayout inOutputBlock(long block) {
        List<Work> placed = new ArrayList<>(works.size());
        long at = block;
        for (Work w : works) {
            if (w.conversion() == Conversion.PASS_THROUGH) {
                placed.add(w);
            } else {
                placed.add(w.outputAt(at));
                at += w.outputBlockBytes();
            }
        }
        return new BatchLayout(placed);
    }

    /**
     * Maps the staged tensors onto the fragments of {@code layout}, every output in place.
     *
     * @throws RelayException {@code manifest-mismatch} when a tensor is not in the manifest, is
     *     sent with another dtype or shape, lies outside the reservation, or a part does not start
     *     and end on fragment boundaries; {@code unsupported-conversion} when no conversion leads
     *     from the trainer's dtype to the rollout's
     */
    /**
     * Every staged part must carry the rank's CRC32C: without it the bytes between the trainer and
     * the publisher's conversion would be proven by nobody (the published checksum is taken of what
     * the publisher found in staging, whatever a broken copy left there).
     */
    private static void requireChecksum(StagedTensor staged) {
        String checksum = staged.getChecksum();
        // (another algorithm's checksum never gets here: the contract's pattern refuses it)
        if (checksum == null || checksum.isBlank()) {
            String why = "has no checksum";
            throw PublishProblems.TENSOR_CHECKSUM_REQUIRED
                    .exception(
                            "tensor '"
                                    + staged.getName()
                                    + "' "
                                    + why
                                    + ": every staged part needs the CRC32C of its bytes as the"
                                    + " rank wrote them (checksum: crc32c:xxxxxxxx)")
                    .with("tensor", staged.getName());
        }
    }

    static BatchLayout of(
            GenerationLayout layout,
            StagingArea.Reservation reservation,
            List<StagedTensor> tensors) {
        List<Work> works = new ArrayList<>();
        for (int i = 0; i < tensors.size(); i++) {
            StagedTensor staged = tensors.get(i);
            GenerationLayout.Tensor tensor =
                    layout.tensor(staged.getName())
                            .orElseThrow(
                                    () ->
                                            mismatch(
                                                    "tensor '"
                                                            + staged.getName()
                                                            + "' is not in the manifest of "
                                                            + layout.model()
                                                            + "/"
                                                            + layout.generation()));
            requireChecksum(staged);
            if (tensor.scalesOf() != null) {
                throw mismatch(
                        "tensor '"
                                + tensor.name()
                                + "' holds the block-FP8 scales of '"
                                + tensor.scalesOf()
                                + "': the publisher computes it while converting that weight;"
                                + " ranks do not send it");
            }
            DType type = DType.ofWireName(staged.getDtype().getValue());
            if (type != tensor.trainerType() || !tensor.shape().equals(staged.getShape())) {
                throw mismatch(
                        "tensor '"
                                + tensor.name()
                                + "' is "
                                + tensor.trainerType().wireName()
                                + tensor.shape()
                                + " in the manifest, the batch says "
                                + type.wireName()
                                + staged.getShape());
            }
            Conversion conversion =
                    Conversion.between(tensor.trainerType(), tensor.rolloutType())
                            .orElseThrow(
                                    () ->
                                            PublishProblems.UNSUPPORTED_CONVERSION.exception(
                                                    "no conversion from "
                                                            + tensor.trainerType().wireName()
                                                            + " to "
                                                            + tensor.rolloutType().wireName()
                                                            + " (tensor '"
                                                            + tensor.name()
                                                            + "')"));
            works.addAll(fragments(i, tensor, staged, type.bytes(), conversion, reservation));
        }
        return new BatchLayout(works);
    }

    /** The fragments one staged tensor (or part) covers, in place in its staged bytes. */
    private static List<Work> fragments(
            int tensorIndex,
            GenerationLayout.Tensor tensor,
            StagedTensor staged,
            int width,
            Conversion conversion,
            StagingArea.Reservation reservation) {
        long tensorOffset = staged.getTensorOffset() == null ? 0 : staged.getTensorOffset();
        long bytes = staged.getBytes();
        if (!reservation.contains(staged.getStagingOffset(), bytes)) {
            throw mismatch(
                    "tensor '"
                            + tensor.name()
                            + "' bytes ["
                            + staged.getStagingOffset()
                            + ", +"
                            + bytes
                            + ") lie outside reservation "
                            + reservation.id());
        }
        if (tensorOffset % width != 0 || bytes % width != 0) {
            throw mismatch("tensor '" + tensor.name() + "': part is not whole elements");
        }
        long first = tensorOffset / width;
        long end = first + bytes / width;
        if (end > tensor.elements()) {
            throw mismatch("tensor '" + tensor.name() + "': part ends after the tensor");
        }
        List<Work> works = new ArrayList<>();
        long expect = first;
        for (GenerationLayout.Fragment f : tensor.fragments()) {
            long fEnd = f.firstElement() + f.elements();
            boolean inside = f.firstElement() >= first && fEnd <= end;
            boolean crosses = f.firstElement() < end && fEnd > first && !inside;
            if (crosses) {
                throw mismatch(
                        "tensor '"
                                + tensor.name()
                                + "': part ["
                                + first
                                + ", "
                                + end
                                + ") elements cuts fragment "
                                + f.key()
                                + "; parts start and end on fragment boundaries");
            }
            if (!inside || (f.elements() == 0 && bytes > 0)) {
                continue;
            }
            long at = staged.getStagingOffset() + (f.firstElement() - first) * width;
            Scales scales = null;
            if (conversion.blockScaled()) {
                long cols = tensor.shape().get(1);
                // In place, the scales follow the E4M3 bytes inside the fragment's own input.
                scales =
                        new Scales(
                                f.scaleKey(),
                                cols == 0 ? 0 : f.elements() / cols,
                                cols,
                                Math.toIntExact(f.scaleBytes()),
                                at + f.elements());
                if (f.scaleKey() == null) {
                    throw mismatch("fragment " + f.key() + " has no scale object");
                }
            }
            works.add(
                    new Work(
                            f.key(),
                            tensorIndex,
                            at,
                            Math.toIntExact(f.elements() * width),
                            conversion,
                            at,
                            scales));
            expect = fEnd;
        }
        if (expect != end) {
            throw mismatch("tensor '" + tensor.name() + "': fragments do not cover the part");
        }
        return works;
    }

    private static RelayException mismatch(String detail) {
        return PublishProblems.MANIFEST_MISMATCH.exception(detail);
    }
}
