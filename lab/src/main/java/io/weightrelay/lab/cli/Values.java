package io.weightrelay.lab.cli;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The checks behind the flags: each converter refuses a bad value naming what is valid, and hands
 * the text on unchanged, since the command's own {@code main} parses it again.
 */
final class Values {

    private Values() {}

    /** A value from a list of choices, refused naming them all. */
    abstract static class Choice implements ITypeConverter<String>, Iterable<String> {
        private final String what;

        Choice(String what) {
            this.what = what;
        }

        abstract boolean accepts(String value);

        @Override
        public final String convert(String value) {
            if (!accepts(value)) {
                throw new TypeConversionException(
                        "'" + value + "' is not " + what + "; valid: " + join(this));
            }
            return value;
        }
    }

    /** A catalogued model ({@code ModelCatalog}). */
    static final class Model extends Choice {
        Model() {
            super("a catalogued model");
        }

        @Override
        boolean accepts(String value) {
            return ModelCatalog.names().contains(value);
        }

        @Override
        public Iterator<String> iterator() {
            return ModelCatalog.names().stream().sorted().iterator();
        }
    }

    /** {@code compat} or {@code direct} (and the long names {@code Mode.parse} takes). */
    static final class RolloutMode extends Choice {
        RolloutMode() {
            super("a mode");
        }

        @Override
        boolean accepts(String value) {
            return parses(Mode::parse, value);
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("compat", "direct").iterator();
        }
    }

    /** {@code compat} or {@code direct} exactly, as {@code bench control-plane} takes them. */
    static final class StrictMode extends Choice {
        StrictMode() {
            super("a mode");
        }

        @Override
        boolean accepts(String value) {
            return value.equals("compat") || value.equals("direct");
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("direct", "compat").iterator();
        }
    }

    /** The planner bench's rollout dtypes, {@code bf16} or {@code fp8} (block-scaled E4M3). */
    static final class RolloutDtype extends Choice {
        RolloutDtype() {
            super("a rollout dtype");
        }

        @Override
        boolean accepts(String value) {
            return value.equals("bf16") || value.equals("fp8");
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("bf16", "fp8").iterator();
        }
    }

    /** The demo's modes: one of them or {@code both}. */
    static final class DemoMode extends Choice {
        DemoMode() {
            super("a mode");
        }

        @Override
        boolean accepts(String value) {
            return value.equals("both") || parses(Mode::parse, value);
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("compat", "direct", "both").iterator();
        }
    }

    /** A dtype by its contract name ({@code bf16}, {@code fp32}, ...). */
    static final class Dtype extends Choice {
        Dtype() {
            super("a dtype");
        }

        @Override
        boolean accepts(String value) {
            return parses(DType::ofWireName, value);
        }

        @Override
        public Iterator<String> iterator() {
            return DType.onTheWire().stream().map(DType::wireName).iterator();
        }
    }

    /** Where {@code bench publish} stages a rank's bytes. */
    static final class StagingMode extends Choice {
        StagingMode() {
            super("a staging mode");
        }

        @Override
        boolean accepts(String value) {
            return value.equals("segment") || value.equals("file");
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("segment", "file").iterator();
        }
    }

    /** A count of at least 1. */
    static final class Positive implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            return atLeast(value, whole(value, Integer::parseInt), 1);
        }
    }

    /** A count of at least 0. */
    static final class NonNegative implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            return atLeast(value, whole(value, Integer::parseInt), 0);
        }
    }

    /** A byte count (or a number of seconds) of at least 1. */
    static final class PositiveLong implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            return atLeast(value, whole(value, Long::parseLong), 1);
        }
    }

    /** A rate above zero, such as {@code --nic-gbps}. */
    static final class PositiveNumber implements ITypeConverter<Double> {
        @Override
        public Double convert(String value) {
            double d;
            try {
                d = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                throw new TypeConversionException("'" + value + "' is not a number");
            }
            if (!(d > 0) || Double.isInfinite(d)) {
                throw new TypeConversionException("'" + value + "' must be above 0");
            }
            return d;
        }
    }

    /** A TCP port. */
    static final class Port implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            int n = whole(value, Integer::parseInt);
            if (n < 1 || n > 65535) {
                throw new TypeConversionException("'" + value + "' is not a port (1-65535)");
            }
            return n;
        }
    }

    /**
     * Whether {@code parser} takes {@code value} (it throws {@code IllegalArgumentException} if
     * not).
     */
    private static boolean parses(Consumer<String> parser, String value) {
        try {
            parser.accept(value);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static <N extends Number> N whole(String value, Function<String, N> parser) {
        try {
            return parser.apply(value);
        } catch (NumberFormatException e) {
            throw new TypeConversionException("'" + value + "' is not a whole number");
        }
    }

    private static <N extends Number> N atLeast(String value, N n, long min) {
        if (n.longValue() < min) {
            throw new TypeConversionException("'" + value + "' must be at least " + min);
        }
        return n;
    }

    private static String join(Iterable<String> choices) {
        List<String> all = new ArrayList<>();
        choices.forEach(all::add);
        return String.join(", ", all);
    }
}
