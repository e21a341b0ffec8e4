package io.weightrelay.publisher.convert;

import io.weightrelay.reshard.convert.BlockFp8;
import io.weightrelay.reshard.manifest.DType;
import java.util.Optional;

/**
 * How the bytes of one element type become another. Only the conversions a trainer needs exist;
 * everything else is refused before any byte is touched.
 */
public enum Conversion {
    /** Equal types: the bytes are stored as they are. */
    PASS_THROUGH(1, 1),
    /** fp32 to bf16, round to nearest even, NaN stays NaN (quiet, sign and top payload kept). */
    FP32_TO_BF16(4, 2),
    /** fp32 to fp16, round to nearest even incl. subnormals, overflow to infinity, NaN kept. */
    FP32_TO_FP16(4, 2),
    /** fp32 to block-scaled FP8 E4M3 with F32 block scales ({@link BlockFp8}). */
    FP32_TO_FP8_BLOCK(4, 1),
    /** bf16 to block-scaled FP8 E4M3 ({@link BlockFp8}). */
    BF16_TO_FP8_BLOCK(2, 1),
    /** fp16 to block-scaled FP8 E4M3 ({@link BlockFp8}). */
    FP16_TO_FP8_BLOCK(2, 1);

    private final int sourceWidth;
    private final int targetWidth;

    Conversion(int sourceWidth, int targetWidth) {
        this.sourceWidth = sourceWidth;
        this.targetWidth = targetWidth;
    }

    /** The conversion from {@code from} to {@code to}, if one exists. */
    public static Optional<Conversion> between(DType from, DType to) {
        if (from == to) {
            return Optional.of(PASS_THROUGH);
        }
        if (from == DType.F32 && to == DType.BF16) {
            return Optional.of(FP32_TO_BF16);
        }
        if (from == DType.F32 && to == DType.F16) {
            return Optional.of(FP32_TO_FP16);
        }
        if (to == DType.F8_E4M3) {
            return switch (from) {
                case F32 -> Optional.of(FP32_TO_FP8_BLOCK);
                case BF16 -> Optional.of(BF16_TO_FP8_BLOCK);
                case F16 -> Optional.of(FP16_TO_FP8_BLOCK);
                default -> Optional.empty();
            };
        }
        return Optional.empty();
    }

    /** Output bytes for {@code sourceBytes} input bytes. */
    public long outputBytes(long sourceBytes) {
        return this == PASS_THROUGH ? sourceBytes : sourceBytes / sourceWidth * targetWidth;
    }

    /**
     * Whether this writes block scales beside its output ({@link BlockFp8}, not {@link Converter}).
     */
    public boolean blockScaled() {
        return this == FP32_TO_FP8_BLOCK || this == BF16_TO_FP8_BLOCK || this == FP16_TO_FP8_BLOCK;
    }

    /** The input type of a block-scaled conversion. */
    public DType sourceType() {
        return switch (this) {
            case BF16_TO_FP8_BLOCK -> DType.BF16;
            case FP16_TO_FP8_BLOCK -> DType.F16;
            case PASS_THROUGH -> throw new IllegalStateException("pass-through has no one type");
            default -> DType.F32;
        };
    }

    /** Input bytes per element (1 for pass-through, which works on bytes). */
    public int sourceWidth() {
        return sourceWidth;
    }
}
