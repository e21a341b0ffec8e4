package io.weightrelay.lab.cli;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.placement.Mode;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The checks behind the flags: each converter refuses a bad value naming what is valid, and hands
 * the text on unchanged; the command turns it into the options' type ({@code Mode.parse}, ...).
 */
final class Values {

    private Values() {}

    /**
     * A value from a list of choices, refused naming them all: what it is, which values it takes,
     * and the ones the help and the refusal show.
     */
    abstract static class Choice implements ITypeConverter<String>, Iterable<String> {
        private final String what;
        private final Predicate<String> accepts;
        private final List<String> shown;

        Choice(String what, Predicate<String> accepts, List<String> shown) {
            this.what = what;
            this.accepts = accepts;
            this.shown = shown;
        }

        /** Exactly these values, shown in this order. */
        Choice(String what, String... choices) {
            this(what, List.of(choices)::contains, List.of(choices));
        }

        @Override
        public final String convert(String value) {
            if (!accepts.test(value)) {
                throw new TypeConversionException(
                        "'" + value + "' is not " + what + "; valid: " + String.join(", ", shown));
            }
            return value;
        }

        @Override
        public final Iterator<String> iterator() {
            return shown.iterator();
        }
    }

    /** A catalogued model ({@code ModelCatalog}). */
    static final class Model extends Choice {
        Model() {
            super(
                    "a catalogued model",
                    ModelCatalog.names()::contains,
                    ModelCatalog.names().stream().sorted().toList());
        }
    }

    /** {@code compat} or {@code direct} (and the long names {@code Mode.parse} takes). */
    static final class RolloutMode extends Choice {
        RolloutMode() {
            super("a mode", value -> parses(Mode::parse, value), List.of("compat", "direct"));
        }
    }

    /** {@code compat} or {@code direct} exactly, as {@code bench control-plane} takes them. */
    static final class StrictMode extends Choice {
        StrictMode() {
            super("a mode", "direct", "compat");
        }
    }

    /** The planner bench's rollout dtypes, {@code bf16} or {@code fp8} (block-scaled E4M3). */
    static final class RolloutDtype extends Choice {
        RolloutDtype() {
            super("a rollout dtype", "bf16", "fp8");
        }
    }

    /** The demo's modes: one of them or {@code both}. */
    static final class DemoMode extends Choice {
        DemoMode() {
            super(
                    "a mode",
                    value -> value.equals("both") || parses(Mode::parse, value),
                    List.of("compat", "direct", "both"));
        }
    }

    /** The data plane a lab's services run on ({@code relay.dataplane.engine}). */
    static final class Engine extends Choice {
        Engine() {
            super("an engine", "builtin", "mooncake");
        }
    }

    /** A dtype by its contract name ({@code bf16}, {@code fp32}, ...). */
    static final class Dtype extends Choice {
        Dtype() {
            super(
                    "a dtype",
                    value -> parses(DType::ofWireName, value),
                    DType.onTheWire().stream().map(DType::wireName).toList());
        }
    }

    /** Where {@code bench publish} stages a rank's bytes. */
    static final class StagingMode extends Choice {
        StagingMode() {
            super("a staging mode", "segment", "file");
        }
    }

    static final class DirectInstall extends Choice {
        DirectInstall() {
            super("a direct install", "in-place", "staged");
        }
    }

    /** A whole number from {@code min} to {@code max}, refused with {@code outOfRange} outside. */
    abstract static class Whole<N extends Number> implements ITypeConverter<N> {
        private final Function<String, N> parser;
        private final long min;
        private final long max;
        private final String outOfRange;

        Whole(Function<String, N> parser, long min, long max, String outOfRange) {
            this.parser = parser;
            this.min = min;
            this.max = max;
            this.outOfRange = outOfRange;
        }

        Whole(Function<String, N> parser, long min) {
            this(parser, min, Long.MAX_VALUE, "must be at least " + min);
        }

        @Override
        public final N convert(String value) {
            N n;
            try {
                n = parser.apply(value);
            } catch (NumberFormatException e) {
                throw new TypeConversionException("'" + value + "' is not a whole number");
            }
            if (n.longValue() < min || n.longValue() > max) {
                throw new TypeConversionException("'" + value + "' " + outOfRange);
            }
            return n;
        }
    }

    /** A count of at least 1. */
    static final class Positive extends Whole<Integer> {
        Positive() {
            super(Integer::parseInt, 1);
        }
    }

    /** A count of at least 0. */
    static final class NonNegative extends Whole<Integer> {
        NonNegative() {
            super(Integer::parseInt, 0);
        }
    }

    /** A byte count (or a number of seconds) of at least 1. */
    static final class PositiveLong extends Whole<Long> {
        PositiveLong() {
            super(Long::parseLong, 1);
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
    static final class Port extends Whole<Integer> {
        Port() {
            super(Integer::parseInt, 1, 65535, "is not a port (1-65535)");
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
}
